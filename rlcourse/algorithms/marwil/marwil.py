"""MARWIL (Wang et al. 2018): learn from recorded data alone, imitating each recorded action in
proportion to exp(beta * its advantage), so good actions in mixed data count more; beta 0 is BC."""

from typing import Any

from rlcourse.algorithms import off_policy
from rlcourse.algorithms.algorithm import Algorithm
from rlcourse.algorithms.algorithm_config import AlgorithmConfig
from rlcourse.algorithms.config_setters import NotProvided, setter
from rlcourse.algorithms.config_validation import check_int, check_number
from rlcourse.core import ALL_MODULES, DEFAULT_MODULE_ID
from rlcourse.core.rl_module.default_model_config import DEFAULT_MODEL_CONFIG
from rlcourse.utils.validation import fail


class MARWILConfig(AlgorithmConfig):
    """MARWIL's settings with RLlib 2.60's defaults; the data comes from `offline_data(input_=...)`,
    and `dataset_num_iters_per_learner` steps make an iteration (None: one pass over the data)."""

    @property
    def algo_class(self) -> type["MARWIL"]:
        return MARWIL

    def get_default_learner_class(self) -> type:
        from rlcourse.algorithms.marwil.marwil_learner import MARWILLearner  # torch: learners only
        return MARWILLearner

    def get_default_prelearner_class(self) -> type:
        """The OfflinePreLearner of its data; with beta > 0 it adds rewards and episode bounds."""
        from rlcourse.algorithms.marwil.marwil_prelearner import MARWILOfflinePreLearner  # Ray Data
        from rlcourse.offline.offline_prelearner import OfflinePreLearner
        return MARWILOfflinePreLearner if self.beta > 0 else OfflinePreLearner

    # RLlib's MARWIL keeps the policy and value networks apart, as its PPO does.
    default_model_config = {**DEFAULT_MODEL_CONFIG, "vf_share_layers": False}

    def __init__(self) -> None:
        super().__init__()
        self.lr = 1e-4
        self.train_batch_size_per_learner = 2000
        self.minibatch_size = None  # one step on each whole batch, as RLlib's MARWIL takes
        self.grad_clip = None
        self.beta = 1.0
        self.vf_coeff = 1.0
        self.moving_average_sqd_adv_norm_start = 100.0
        self.moving_average_sqd_adv_norm_update_rate = 1e-8
        # RLlib keeps the data in Ray's object store once read (its materialize_data): the
        # OfflinePreLearner keeps no state, so every epoch can reuse the rows.
        self.materialize_data = True

    @setter
    def training(self, *, beta: float = NotProvided, vf_coeff: float = NotProvided,
                 moving_average_sqd_adv_norm_start: float = NotProvided,
                 moving_average_sqd_adv_norm_update_rate: float = NotProvided,
                 **kwargs: Any) -> "MARWILConfig":
        """`beta`: how strongly advantages weigh the imitation (0: BC); `vf_coeff`: the value loss's
        weight; the squared-advantage norm c^2 (advantages are divided by c) starts at
        `moving_average_sqd_adv_norm_start` and moves towards each batch's mean A^2 at `..._rate`."""
        super().training(**kwargs)

    def validate(self) -> None:
        super().validate()
        if self.input_ is None:
            fail(self, "input_", f"{self.algo_class.__name__} learns from recorded data: set "
                 "config.offline_data(input_=PATH) to Parquet files recorded with "
                 "config.offline_data(output=PATH), or to a ray.data.Dataset.")
        if self.dataset_num_iters_per_learner is not None:
            check_int(self, "dataset_num_iters_per_learner", 1)
        check_number(self, "beta", 0.0, 1.0)  # RLlib's range
        check_number(self, "vf_coeff", 0.0)
        check_number(self, "moving_average_sqd_adv_norm_start", 0.0, low_open=True)
        check_number(self, "moving_average_sqd_adv_norm_update_rate", 0.0, 1.0)


class MARWIL(Algorithm):
    """Reads batches of recorded rows and takes one weighted-imitation step on each; the runners
    only evaluate (config.evaluation(...))."""

    @classmethod
    def get_default_config(cls) -> MARWILConfig:
        return MARWILConfig()

    def training_step(self) -> dict[str, Any]:
        cfg = self.config
        num_iters = cfg.dataset_num_iters_per_learner or max(
            1, self.offline_data.num_rows // cfg.total_train_batch_size)
        results = []
        for _ in range(num_iters):
            # 1. The next batch of recorded rows, streamed by Ray Data (OfflinePreLearner: checked);
            #    Learner actors each read their own split of the data instead.
            with self.timers.time("offline_sampling_timer"):
                batch = self.offline_data.sample(cfg.train_batch_size_per_learner, cfg.num_learners)
            # 2. One step on the recorded actions, weighted by advantage, gradients all-reduced.
            with self.timers.time("learner_update_timer"):
                results.append(self.learner_group.update_from_batch(batch))
            self.num_env_steps_trained_lifetime += results[-1]["num_env_steps_trained"]
        # 3. The runners (evaluation's, too) act with the new weights.
        self.sync_env_runner_weights()
        learner = off_policy.mean_learner_results(results)  # the iteration's steps, averaged
        if "moving_avg_sqd_adv_norm" in learner:  # a running estimate: its latest value (RLlib's too)
            learner["moving_avg_sqd_adv_norm"] = results[-1]["moving_avg_sqd_adv_norm"]
        return {"env_runners": self.episode_stats.add([]),
                "learners": {DEFAULT_MODULE_ID: learner, ALL_MODULES: {
                    "num_env_steps_trained": learner["num_env_steps_trained"]}}}
