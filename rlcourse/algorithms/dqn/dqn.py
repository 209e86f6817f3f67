"""DQN (Mnih et al. 2015) with double Q, dueling heads, n-step returns and prioritized replay: the
settings and the loop (the loss: `dqn_learner.py`)."""

from typing import Any

import gymnasium as gym
import numpy as np

from rlcourse.algorithms import off_policy
from rlcourse.algorithms.algorithm import Algorithm
from rlcourse.algorithms.algorithm_config import AlgorithmConfig
from rlcourse.algorithms.config_setters import NotProvided, setter
from rlcourse.algorithms.config_validation import check_bool, env_spaces
from rlcourse.core import DEFAULT_MODULE_ID
from rlcourse.core.rl_module.numpy_mlp import EpsilonGreedy
from rlcourse.core.rl_module.rl_module_spec import RLModuleSpec
from rlcourse.utils.validation import fail


class DQNConfig(AlgorithmConfig):
    """DQN's settings, with RLlib's names and, where not said otherwise, RLlib's defaults
    (benchmarks/dqn_cartpole.py measures how soon they solve CartPole-v1)."""

    # Not RLlib's [256, 256]: [64, 64] is cheaper to update and enough for CartPole-v1
    # (benchmarks/dqn_cartpole.py measures its updates/s and env steps to 450).
    default_model_config = {"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh"}
    extra_replay_buffer_keys: tuple = ()  # Ape-X's config adds its shard count

    @property
    def algo_class(self) -> type["DQN"]:
        return DQN

    def get_default_learner_class(self) -> type:
        from rlcourse.algorithms.dqn.dqn_learner import DQNLearner  # torch: where learners run
        return DQNLearner

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        from rlcourse.algorithms.dqn.dqn_rl_module import DefaultDQNModule  # torch
        return RLModuleSpec(module_class=DefaultDQNModule)

    def __init__(self) -> None:
        super().__init__()
        self.lr = 5e-4
        self.train_batch_size_per_learner = 32
        self.minibatch_size = None  # one gradient step per replay batch
        self.num_epochs = 1
        self.grad_clip = 40.0
        self.double_q = self.dueling = True
        # Not RLlib's defaults (n_step 1, epsilon down to 0.05, one update per sample round):
        # the 3-step returns and final epsilon of RLlib's tuned CartPole example, and a replay
        # ratio of 8 (a batch of 32 per 4 env steps sampled).
        self.n_step = 3
        self.epsilon: list = [[0, 1.0], [10_000, 0.02]]
        self.target_network_update_freq = 500
        self.tau = 1.0
        self.num_steps_sampled_before_learning_starts = 1000
        self.training_intensity: float | None = 8.0
        self.replay_buffer_config: dict = {"type": "PrioritizedEpisodeReplayBuffer",
                                           "capacity": 50_000, "alpha": 0.6, "beta": 0.4}
        self.store_buffer_in_checkpoints = False

    @setter
    def training(self, *, double_q: bool = NotProvided, dueling: bool = NotProvided,
                 n_step: int = NotProvided, epsilon: list = NotProvided,
                 target_network_update_freq: int = NotProvided, tau: float = NotProvided,
                 num_steps_sampled_before_learning_starts: int = NotProvided,
                 training_intensity: float | None = NotProvided,
                 replay_buffer_config: dict = NotProvided,
                 store_buffer_in_checkpoints: bool = NotProvided, **kwargs: Any) -> "DQNConfig":
        """DQN's own settings plus the shared ones. `epsilon`: [[timestep, value], ...] by env
        steps sampled, linear in between; `target_network_update_freq`: env steps sampled between
        target updates (by `tau`); `training_intensity`: env steps trained per env step sampled
        (None: one update per training_step); `replay_buffer_config` is merged into the current one.
        """
        super().training(**kwargs)
        if isinstance(replay_buffer_config, dict):
            return {"replay_buffer_config": {**self.replay_buffer_config, **replay_buffer_config}}

    def get_model_config(self) -> dict:
        return {**self.model_config, "dueling": self.dueling}

    def get_action_head(self, action_space: gym.spaces.Discrete, worker_index: int = 0
                        ) -> EpsilonGreedy:
        """Epsilon-greedy; each weights sync brings the schedule's epsilon (`DQN.runner_epsilon`)."""
        return EpsilonGreedy(int(action_space.n))

    def validate(self) -> None:
        super().validate()
        check_bool(self, "double_q", "True (the online net picks the next action) or False")
        check_bool(self, "dueling", "True (value + advantage heads) or False")
        off_policy.check_replay_settings(self, tau_hint="1.0 copies the online network into the "
                                         "target; 0.005 moves it slowly.",
                                         extra_buffer_keys=self.extra_replay_buffer_keys)
        if self.rl_module_class is not None:
            from rlcourse.algorithms.dqn.dqn_rl_module import DefaultDQNModule
            if not issubclass(self.rl_module_class, DefaultDQNModule):
                fail(self, "rl_module_class", "DQN's learner and runners need Q-values and a target "
                     "network: subclass rlcourse.algorithms.dqn.dqn_rl_module.DefaultDQNModule.")
        off_policy.check_schedule(self, "epsilon")
        _, action_space = env_spaces(self)
        if not isinstance(action_space, gym.spaces.Discrete):
            fail(self, "env", f"its action space is {action_space}, and DQN picks one of finitely "
                 "many actions (gymnasium.spaces.Discrete). Use an env with Discrete actions, or "
                 "PPO for continuous (Box) actions.")


class DQN(Algorithm):
    """Off-policy: each training_step samples epsilon-greedily, stores every step in a replay buffer
    and trains on replayed batches, old and new steps alike, as `training_intensity` says."""

    @classmethod
    def get_default_config(cls) -> DQNConfig:
        return DQNConfig()

    def setup(self, config: DQNConfig) -> None:
        super().setup(config)
        self.replay_buffer = off_policy.build_replay_buffer(config)
        self._update_credit = 0.0  # updates owed to the replay ratio, fractions carried over
        self._rng = np.random.default_rng(config.seed)  # compute_actions(explore=True)

    def runner_epsilon(self) -> float:
        """What the epsilon schedule gives for the env steps sampled so far: the runners explore
        with it (it comes with each weights sync)."""
        return off_policy.scheduled_value(self.config.epsilon,
                                          self.episode_stats.num_env_steps_sampled_lifetime)

    def training_step(self) -> dict[str, Any]:
        cfg = self.config
        # 1. Sample with epsilon-greedy actions and store every step in the replay buffer.
        with self.timers.time("env_runner_sampling_timer"):
            episodes, runner_metrics = self.env_runner_group.sample()
        env_runner_results = self.episode_stats.add(runner_metrics)
        with self.timers.time("replay_buffer_add_data_timer"):
            self.replay_buffer.add(episodes)
        sampled_lifetime = self.episode_stats.num_env_steps_sampled_lifetime
        # 2. Once the buffer is warm, replay batches and learn; new TD errors become priorities.
        learner_results: list[dict[str, Any]] = []
        if off_policy.learning_started(cfg, sampled_lifetime, len(self.replay_buffer)):
            num_updates, self._update_credit = off_policy.num_updates_due(
                cfg, self._update_credit, env_runner_results["num_env_steps_sampled"])
            with self.timers.time("learner_update_timer"):
                learner_results = off_policy.update_from_replay(
                    cfg, self.replay_buffer, self.learner_group, num_updates, sampled_lifetime)
        # 3. Send the new weights and the current epsilon to the runners.
        with self.timers.time("synch_weights"):
            self.sync_env_runner_weights()
        learner = off_policy.mean_learner_results(learner_results)
        self.num_env_steps_trained_lifetime += learner["num_env_steps_trained"]
        env_runner_results["epsilon"] = self.runner_epsilon()
        return {"env_runners": env_runner_results, "learners": {DEFAULT_MODULE_ID: learner},
                "replay_buffer": {"num_env_steps_stored": len(self.replay_buffer),
                                  "num_episodes_stored": self.replay_buffer.get_num_episodes()}}

    def compute_actions(self, observations: np.ndarray, explore: bool = False,
                        module_id: str | None = None) -> np.ndarray:
        """Greedy actions; with `explore`, epsilon-greedy ones with the current epsilon."""
        actions = super().compute_actions(observations, explore=False, module_id=module_id)
        if explore:
            actions = off_policy.epsilon_greedy(actions, self.runner_epsilon(), self.action_space,
                                                self._rng)
        return actions

    def get_state(self) -> tuple[dict[str, Any], dict[str, Any]]:
        state, tensors = super().get_state()
        state["dqn"] = off_policy.replay_state(self.config, self.replay_buffer, self._update_credit)
        return state, tensors

    def _check_own_state(self, state: dict[str, Any]) -> None:
        buffer = self.replay_buffer
        off_policy.check_replay_state(state, "dqn", buffer.capacity, buffer.PRIORITIZED,
                                      self._module_spaces()[DEFAULT_MODULE_ID])

    def set_state(self, state: dict[str, Any], tensors: dict[str, Any]) -> None:
        super().set_state(state, tensors)  # the runners get the restored weights and epsilon
        self._update_credit = off_policy.set_replay_state(state["dqn"], self.replay_buffer)
