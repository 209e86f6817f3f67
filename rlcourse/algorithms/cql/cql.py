"""CQL (Kumar et al. 2020): SAC learning from recorded data alone, with a penalty that keeps the
critics from overvaluing actions the data never took (`cql_learner.py`)."""

from typing import Any

from rlcourse.algorithms import off_policy
from rlcourse.algorithms.algorithm import Algorithm
from rlcourse.algorithms.config_setters import NotProvided, setter
from rlcourse.algorithms.config_validation import check_bool, check_int, check_number
from rlcourse.algorithms.sac.sac import SACConfig
from rlcourse.core import ALL_MODULES, DEFAULT_MODULE_ID
from rlcourse.utils.validation import fail


class CQLConfig(SACConfig):
    """SAC's settings plus CQL's, with RLlib 2.60's defaults; the data (`offline_data(input_=...)`)
    is the replay buffer, and `dataset_num_iters_per_learner` updates make an iteration."""

    discrete_instead = "BC (rlcourse.algorithms.bc.BCConfig)"

    @property
    def algo_class(self) -> type["CQL"]:
        return CQL

    def get_default_learner_class(self) -> type:
        from rlcourse.algorithms.cql.cql_learner import CQLLearner  # torch: where learners run
        return CQLLearner

    def get_default_prelearner_class(self) -> type:
        from rlcourse.algorithms.cql.cql_prelearner import CQLPreLearner  # Ray Data: only here
        return CQLPreLearner

    def __init__(self) -> None:
        super().__init__()
        self.bc_iters = 20_000
        self.temperature = 1.0
        self.num_actions = 10
        self.lagrangian = False
        self.lagrangian_thresh = 5.0
        self.min_q_weight = 5.0
        self.deterministic_backup = True
        self.actor_lr, self.critic_lr, self.alpha_lr = 1e-4, 1e-3, 1e-3
        self.n_step = 1  # a recorded row is a one-step transition
        self.materialize_data = True  # as BC: the rows, checked once, reused every epoch

    @setter
    def training(self, *, bc_iters: int = NotProvided, temperature: float = NotProvided,
                 num_actions: int = NotProvided, lagrangian: bool = NotProvided,
                 lagrangian_thresh: float = NotProvided, min_q_weight: float = NotProvided,
                 deterministic_backup: bool = NotProvided, **kwargs: Any) -> "CQLConfig":
        """CQL's settings plus SAC's. `bc_iters`: updates whose policy loss is behaviour cloning;
        `min_q_weight`: the conservative penalty's weight; `num_actions`: actions sampled per
        state and source (uniform, pi(.|s), pi(.|s')) for its logsumexp; `temperature`: that
        logsumexp's; `deterministic_backup`: the Bellman target without SAC's entropy term;
        `lagrangian`: tune min_q_weight to a gap of `lagrangian_thresh` (not implemented, as in
        RLlib 2.60's new API stack)."""
        super().training(**kwargs)

    def validate(self) -> None:
        super().validate()
        if self.input_ is None:
            fail(self, "input_", "CQL learns from recorded data: set config.offline_data("
                 "input_=PATH) to Parquet files recorded with config.offline_data(output=PATH), "
                 "or to a ray.data.Dataset.")
        if self.dataset_num_iters_per_learner is not None:
            check_int(self, "dataset_num_iters_per_learner", 1)
        check_int(self, "bc_iters", 0)
        check_int(self, "num_actions", 1)
        check_number(self, "temperature", 0.0, low_open=True, hint="1.0 is RLlib's.")
        check_number(self, "min_q_weight", 0.0, hint="5.0 is RLlib's; 0 turns the penalty off.")
        check_bool(self, "deterministic_backup", "True (no entropy term in the target) or False")
        if self.lagrangian is not False:
            fail(self, "lagrangian", "the Lagrangian form (min_q_weight tuned to a gap) is not "
                 "implemented, nor in RLlib 2.60's new API stack: leave lagrangian=False and set "
                 "min_q_weight.")
        if self.n_step != 1:
            fail(self, "n_step", "CQL learns from recorded rows, each a one-step transition: "
                 "leave n_step=1.")


class CQL(Algorithm):
    """Reads batches of recorded transitions and takes one CQL step on each (the target critics
    follow after every step); the runners only evaluate (config.evaluation(...))."""

    @classmethod
    def get_default_config(cls) -> CQLConfig:
        return CQLConfig()

    def training_step(self) -> dict[str, Any]:
        cfg = self.config
        num_iters = cfg.dataset_num_iters_per_learner or max(
            1, self.offline_data.num_rows // cfg.total_train_batch_size)
        results = []
        for _ in range(num_iters):
            # 1. The next batch of recorded transitions, streamed by Ray Data (CQLPreLearner);
            #    Learner actors each read their own split of the data instead.
            with self.timers.time("offline_sampling_timer"):
                batch = self.offline_data.sample(cfg.train_batch_size_per_learner, cfg.num_learners)
            # 2. One step on the critics (TD error + penalty), the policy and alpha; targets follow.
            with self.timers.time("learner_update_timer"):
                result = self.learner_group.update_from_batch(
                    batch, num_env_steps_sampled_lifetime=self.num_env_steps_trained_lifetime)
            result.pop("td_error")  # no priorities offline
            self.num_env_steps_trained_lifetime += result["num_env_steps_trained"]
            results.append(result)
        # 3. The runners (evaluation's, too) act with the new policy.
        self.sync_env_runner_weights()
        learner = off_policy.mean_learner_results(results)
        return {"env_runners": self.episode_stats.add([]),
                "learners": {DEFAULT_MODULE_ID: learner, ALL_MODULES: {
                    "num_env_steps_trained": learner["num_env_steps_trained"]}}}
