"""ApexDQNConfig: DQN's settings plus Ape-X's (RLlib's names), and the per-runner epsilons (each
runner's action head is built with its own: `get_action_head`).

`replay_buffer_config` takes `num_replay_buffer_shards` (replay actors); its `capacity` is per shard.
The replay ratio (`training_intensity`) is a ceiling for the learner, not a brake on the runners,
unless `throttle_sampling_to_training_intensity` says so.
"""

from typing import Any

import gymnasium as gym

from rlcourse.algorithms.algorithm_config import NotProvided
from rlcourse.algorithms.config_validation import check_bool, check_int, check_number
from rlcourse.algorithms.dqn.dqn import DQNConfig
from rlcourse.core.rl_module.numpy_mlp import EpsilonGreedy
from rlcourse.utils.validation import fail


def per_worker_epsilons(num_env_runners: int, epsilon: float = 0.4, alpha: float = 7.0
                        ) -> list[float]:
    """Runner i's (0-based) fixed epsilon: epsilon ** (1 + alpha * i / (N - 1)) (Ape-X, p. 6;
    RLlib's PerWorkerEpsilonGreedy). One runner explores with `epsilon`."""
    n = num_env_runners
    return [epsilon ** (1 + alpha * i / (n - 1)) if n > 1 else epsilon for i in range(n)]


class ApexDQNConfig(DQNConfig):
    """Ape-X's settings: DQN's, plus RLlib's names for the shards and the requests in flight."""

    @property
    def algo_class(self) -> type:
        from rlcourse.algorithms.apex_dqn.apex_dqn import ApexDQN
        return ApexDQN

    def __init__(self) -> None:
        super().__init__()
        self.num_env_runners = 2
        # RLlib's APEX default. "auto" would give 16 steps per request (a train batch over the
        # sub-envs): on CartPole, 50 sampled ~1.6x the env steps/s of 16, at the same updates/s.
        self.rollout_fragment_length = 50
        self.max_requests_in_flight_per_env_runner = 2
        self.replay_buffer_config = {**self.replay_buffer_config, "num_replay_buffer_shards": 1}
        self.max_requests_in_flight_per_replay_worker = 2
        self.max_weight_sync_delay = 400  # env steps sampled between two weight broadcasts
        # RLlib's APEX runs 25,000 env steps per iteration; short iterations suit a notebook's plots.
        self.min_sample_timesteps_per_iteration = 1000
        # Shards hold data and answer small requests. No CPU by default, so that N runners of one
        # CPU each still fit on N cores; a cluster may give them a fraction.
        self.num_cpus_per_replay_shard = 0.0
        # The replay ratio is a ceiling here: the learner takes at most `training_intensity` env
        # steps per env step sampled, and the runners never wait for it (None: as fast as it can).
        self.training_intensity = 8.0
        # Not in RLlib: on a machine with fewer cores than runners + 1, free-running runners starve
        # the learner of CPU. True makes runners pause while the learner is a round of replay
        # batches behind training_intensity (the replay ratio is then kept, as DQN keeps it).
        self.throttle_sampling_to_training_intensity = False

    def training(self, *, max_requests_in_flight_per_replay_worker: int = NotProvided,
                 max_weight_sync_delay: int = NotProvided,
                 min_sample_timesteps_per_iteration: int = NotProvided,
                 num_cpus_per_replay_shard: float = NotProvided,
                 throttle_sampling_to_training_intensity: bool = NotProvided,
                 **kwargs: Any) -> "ApexDQNConfig":
        """Ape-X's own settings plus DQN's. `replay_buffer_config` takes
        `num_replay_buffer_shards`; its `capacity` is per shard."""
        super().training(**kwargs)
        return self._set(
            max_requests_in_flight_per_replay_worker=max_requests_in_flight_per_replay_worker,
            max_weight_sync_delay=max_weight_sync_delay,
            min_sample_timesteps_per_iteration=min_sample_timesteps_per_iteration,
            num_cpus_per_replay_shard=num_cpus_per_replay_shard,
            throttle_sampling_to_training_intensity=throttle_sampling_to_training_intensity)

    def get_action_head(self, action_space: gym.spaces.Discrete, worker_index: int = 0
                        ) -> EpsilonGreedy:
        """Epsilon-greedy with runner `worker_index`'s own, fixed epsilon (runner i takes entry
        i - 1 of `per_worker_epsilons`; a runner in the driver, index 0, takes the first)."""
        epsilons = per_worker_epsilons(self.num_env_runners)
        return EpsilonGreedy(int(action_space.n), epsilons[max(worker_index - 1, 0) % len(epsilons)])

    def validate(self) -> None:
        if not (isinstance(self.num_env_runners, int) and self.num_env_runners >= 1):
            fail(self, "num_env_runners", "Ape-X samples on runner actors while this process "
                 "learns: use .env_runners(num_env_runners=2) (at least 1), or DQNConfig for "
                 "sampling and learning in one process.")
        super().validate()
        check_int(self, "max_requests_in_flight_per_env_runner", 1)
        check_int(self, "max_requests_in_flight_per_replay_worker", 1)
        check_int(self, "max_weight_sync_delay", 1)
        check_int(self, "min_sample_timesteps_per_iteration", 1)
        check_number(self, "num_cpus_per_replay_shard", 0.0, hint="e.g. 0.1, or 0 (the default).")
        check_bool(self, "throttle_sampling_to_training_intensity", "True or False")
        if self.throttle_sampling_to_training_intensity and self.training_intensity is None:
            fail(self, "throttle_sampling_to_training_intensity", "it needs a replay ratio to keep: "
                 "set training_intensity (e.g. 8.0), or leave this False.")

    def _check_replay_buffer_config(self) -> None:
        rb = self.replay_buffer_config
        if not isinstance(rb, dict):
            fail(self, "replay_buffer_config", "pass a dict, e.g. {'num_replay_buffer_shards': 1}.")
        shards = rb.get("num_replay_buffer_shards")
        if not isinstance(shards, int) or isinstance(shards, bool) or shards < 1:
            fail(self, "replay_buffer_config", f"'num_replay_buffer_shards' is {shards!r}: use a "
                 "whole number >= 1 (the replay memory is split over that many actors).")
        capacity = rb.get("capacity")
        if isinstance(capacity, int) and capacity < self.total_train_batch_size:
            fail(self, "replay_buffer_config", f"its capacity {capacity} (env steps per shard) is "
                 f"smaller than a train batch ({self.total_train_batch_size} rows), and each "
                 "replay batch comes from one shard: raise 'capacity' or lower "
                 "train_batch_size_per_learner.")
        self.replay_buffer_config = {k: v for k, v in rb.items() if k != "num_replay_buffer_shards"}
        try:  # DQN's checks of the rest
            super()._check_replay_buffer_config()
        finally:
            self.replay_buffer_config = rb
