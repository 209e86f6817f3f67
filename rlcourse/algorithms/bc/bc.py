"""BC: learn a policy from recorded data alone, by supervised learning of the recorded actions
(the loss: `bc_learner.py`); it evaluates in the real env, as online algorithms do."""

from typing import TYPE_CHECKING, Any

from rlcourse.algorithms.algorithm import Algorithm
from rlcourse.algorithms.algorithm_config import AlgorithmConfig
from rlcourse.algorithms.config_validation import check_int
from rlcourse.core import ALL_MODULES, DEFAULT_MODULE_ID
from rlcourse.utils.validation import fail

if TYPE_CHECKING:
    from rlcourse.offline.offline_data import OfflineData


class BCConfig(AlgorithmConfig):
    """BC's settings with RLlib 2.60's defaults (lr 1e-4, 2,000-row batches); the data comes from
    `offline_data(input_=...)`, and `dataset_num_iters_per_learner` steps make an iteration
    (None: one pass over the data)."""

    @property
    def algo_class(self) -> type["BC"]:
        return BC

    def get_default_learner_class(self) -> type:
        from rlcourse.algorithms.bc.bc_learner import BCLearner  # torch: where learners run
        return BCLearner

    def __init__(self) -> None:
        super().__init__()
        self.lr = 1e-4
        self.train_batch_size_per_learner = 2000
        self.minibatch_size = None  # one step on each whole batch, as RLlib's BC takes
        # RLlib's BC keeps the data in Ray's object store once read (its materialize_mapped_data):
        # the OfflinePreLearner keeps no state, so every epoch can reuse the rows.
        self.materialize_data = True

    def validate(self) -> None:
        super().validate()
        if self.input_ is None:
            fail(self, "input_", "BC learns from recorded data: set config.offline_data("
                 "input_=PATH) to Parquet files recorded with config.offline_data(output=PATH), "
                 "or to a ray.data.Dataset.")
        if self.dataset_num_iters_per_learner is not None:
            check_int(self, "dataset_num_iters_per_learner", 1)


class BC(Algorithm):
    """Reads batches of recorded rows and takes one supervised step on each; the runners only
    evaluate (config.evaluation(...))."""

    @classmethod
    def get_default_config(cls) -> BCConfig:
        return BCConfig()

    offline_data: "OfflineData | None" = None

    def setup(self, config: BCConfig) -> None:
        from rlcourse.offline.offline_data import OfflineData  # Ray Data: only where BC runs

        super().setup(config)
        # The data is checked against the env's spaces here, before any training step.
        self.offline_data = OfflineData(config, self.observation_space, self.action_space)

    def stop(self) -> None:
        if self.offline_data is not None:
            self.offline_data.stop()
        super().stop()

    def training_step(self) -> dict[str, Any]:
        cfg = self.config
        num_iters = cfg.dataset_num_iters_per_learner or max(
            1, self.offline_data.num_rows // cfg.total_train_batch_size)
        for _ in range(num_iters):
            # 1. The next batch of recorded rows, streamed by Ray Data (OfflinePreLearner: checked).
            with self.timers.time("offline_sampling_timer"):
                batch = self.offline_data.sample(cfg.total_train_batch_size)
            # 2. One supervised step on the recorded actions, split over the learners.
            with self.timers.time("learner_update_timer"):
                learner_results = self.learner_group.update_from_batch(batch)
            self.num_env_steps_trained_lifetime += learner_results["num_env_steps_trained"]
        # 3. The runners (evaluation's, too) act with the new weights.
        self.sync_env_runner_weights()
        return {"env_runners": self.episode_stats.add([]),
                "learners": {DEFAULT_MODULE_ID: learner_results, ALL_MODULES: {
                    "num_env_steps_trained": learner_results["num_env_steps_trained"]}}}
