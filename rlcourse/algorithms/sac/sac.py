"""SAC (Haarnoja et al. 2018), soft actor-critic for continuous (Box) actions: DQN's loop, with a
squashed-Gaussian policy on the runners and twin critics, policy and temperature in the learner."""

import math
from typing import Any

import gymnasium as gym
import numpy as np

from rlcourse.algorithms import off_policy
from rlcourse.algorithms.algorithm import Algorithm
from rlcourse.algorithms.algorithm_config import AlgorithmConfig
from rlcourse.algorithms.config_setters import NotProvided, setter
from rlcourse.algorithms.config_validation import check_bool, check_number, env_spaces, is_number
from rlcourse.core import DEFAULT_MODULE_ID
from rlcourse.core.rl_module.numpy_mlp import SquashedGaussian
from rlcourse.core.rl_module.rl_module_spec import RLModuleSpec
from rlcourse.utils.validation import fail

STEPS_PER_TRAINING_STEP = 100  # with rollout_fragment_length="auto", as RLlib's SAC samples


class SACConfig(AlgorithmConfig):
    """SAC's settings, with RLlib's names and, where not said otherwise, RLlib's defaults; they pass
    RLlib's Pendulum-v1 mark (a return of -250 within 20,000 env steps, benchmarks/sac_pendulum.py)."""

    # Not RLlib's [256, 256]: [128, 128] (benchmarks/sac_pendulum.py measures its updates/s).
    default_model_config = {"fcnet_hiddens": [128, 128], "fcnet_activation": "relu"}
    discrete_instead = "DQN (rlcourse.algorithms.dqn.DQNConfig) or PPO"  # named in validate()
    # One per parameter group of sac_learner.py, in PARAMETER_GROUPS' order; lr stays None.
    learning_rate_settings = ("actor_lr", "critic_lr", "alpha_lr")

    @property
    def algo_class(self) -> type["SAC"]:
        return SAC

    def get_default_learner_class(self) -> type:
        from rlcourse.algorithms.sac.sac_learner import SACLearner  # torch: where learners run
        return SACLearner

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        from rlcourse.algorithms.sac.sac_rl_module import DefaultSACModule  # torch
        return RLModuleSpec(module_class=DefaultSACModule)

    def __init__(self) -> None:
        super().__init__()
        self.lr = None  # SAC has a learning rate per loss
        self.train_batch_size_per_learner = 256
        self.minibatch_size = None  # one gradient step per replay batch
        self.num_epochs = 1
        self.twin_q = True
        self.tau = 0.005
        self.initial_alpha = 1.0
        self.target_entropy: float | str = "auto"
        self.target_network_update_freq = 0  # target updates after every update
        self.store_buffer_in_checkpoints = False
        # RLlib's tuned Pendulum example, not its defaults (actor_lr 3e-5, critic_lr and alpha_lr
        # 3e-4, n_step 1, priorities alpha 0.6 / beta 0.4, a 1e6-step buffer, learning from 1,500).
        self.actor_lr, self.critic_lr, self.alpha_lr = 2e-4, 8e-4, 9e-4
        self.n_step = 3
        self.num_steps_sampled_before_learning_starts = 256
        self.replay_buffer_config: dict = {"type": "PrioritizedEpisodeReplayBuffer",
                                           "capacity": 100_000, "alpha": 1.0, "beta": 0.0}
        self.training_intensity: float | None = 256.0  # RLlib's: each env step trained on 256x
        self.rollout_fragment_length = "auto"  # 100 env steps per training_step, over all sub-envs
        self.metrics_num_episodes_for_smoothing = 5  # as RLlib's Pendulum example (200-step episodes)

    @setter
    def training(self, *, twin_q: bool = NotProvided, tau: float = NotProvided,
                 initial_alpha: float = NotProvided, target_entropy: float | str = NotProvided,
                 n_step: int = NotProvided, actor_lr: float = NotProvided,
                 critic_lr: float = NotProvided, alpha_lr: float = NotProvided,
                 target_network_update_freq: int = NotProvided,
                 num_steps_sampled_before_learning_starts: int = NotProvided,
                 training_intensity: float | None = NotProvided,
                 replay_buffer_config: dict = NotProvided,
                 store_buffer_in_checkpoints: bool = NotProvided, **kwargs: Any) -> "SACConfig":
        """SAC's own settings plus the shared ones; the replay settings are DQN's. `actor_lr`,
        `critic_lr`, `alpha_lr`: the policy's, the critics' and the temperature's learning rates
        (`lr` stays None); `target_entropy`: the entropy alpha steers the policy to ("auto": -dim(A))."""
        super().training(**kwargs)
        if isinstance(replay_buffer_config, dict):
            return {"replay_buffer_config": {**self.replay_buffer_config, **replay_buffer_config}}

    def get_rollout_fragment_length(self) -> int:
        """Steps per sub-env per `sample()`; "auto" splits 100 over all sub-envs."""
        if self.rollout_fragment_length != "auto":
            return int(self.rollout_fragment_length)
        sub_envs = max(1, self.num_env_runners) * self.num_envs_per_env_runner
        return math.ceil(STEPS_PER_TRAINING_STEP / sub_envs)

    def get_model_config(self) -> dict:
        return {**self.model_config, "twin_q": self.twin_q, "initial_alpha": self.initial_alpha}

    def get_action_head(self, action_space: gym.spaces.Box, worker_index: int = 0
                        ) -> SquashedGaussian:
        return SquashedGaussian(action_space)

    def validate(self) -> None:
        super().validate()
        if self.lr is not None:
            fail(self, "lr", "SAC learns with three learning rates: set actor_lr, critic_lr and "
                 "alpha_lr instead, and lr=None.")
        check_number(self, "initial_alpha", 0.0, low_open=True,
                     hint="alpha is the entropy's weight; 1.0 starts with much exploration.")
        if self.target_entropy != "auto" and not is_number(self.target_entropy):
            fail(self, "target_entropy", "use \"auto\" (-dim(A)) or a finite number, e.g. -1.0.")
        check_bool(self, "twin_q", "True (two critics, the smaller target) or False")
        off_policy.check_replay_settings(self, tau_hint="0.005 moves the target critics slowly; "
                                         "1.0 copies the critics.")
        if self.rl_module_class is not None:
            from rlcourse.algorithms.sac.sac_rl_module import DefaultSACModule
            if not issubclass(self.rl_module_class, DefaultSACModule):
                fail(self, "rl_module_class", "SAC's learner and runners need a squashed-Gaussian "
                     "policy and critics: subclass "
                     "rlcourse.algorithms.sac.sac_rl_module.DefaultSACModule.")
        _, action_space = env_spaces(self)
        if not (isinstance(action_space, gym.spaces.Box) and len(action_space.shape) == 1
                and np.all(np.isfinite(action_space.low)) and np.all(np.isfinite(action_space.high))):
            fail(self, "env", f"its action space is {action_space}, and "
                 f"{self.algo_class.__name__} acts in a bounded 1-D Box (continuous actions, "
                 f"squashed into [low, high]). For Discrete actions use {self.discrete_instead}.")


class SAC(Algorithm):
    """DQN's loop with SAC's learner (`sac_learner.py`) and a squashed-Gaussian policy."""

    @classmethod
    def get_default_config(cls) -> SACConfig:
        return SACConfig()

    def setup(self, config: SACConfig) -> None:
        super().setup(config)
        self.replay_buffer = off_policy.build_replay_buffer(config)
        self._update_credit = 0.0  # updates owed to the replay ratio, fractions carried over

    def training_step(self) -> dict[str, Any]:
        cfg = self.config
        # 1. Sample from the squashed Gaussian and store every step in the replay buffer.
        with self.timers.time("env_runner_sampling_timer"):
            episodes, runner_metrics = self.env_runner_group.sample()
        env_runner_results = self.episode_stats.add(runner_metrics)
        with self.timers.time("replay_buffer_add_data_timer"):
            self.replay_buffer.add(episodes)
        sampled_lifetime = self.episode_stats.num_env_steps_sampled_lifetime
        # 2. Once the buffer is warm, replay batches and update the critics, the policy and alpha.
        learner_results: list[dict[str, Any]] = []
        if off_policy.learning_started(cfg, sampled_lifetime, len(self.replay_buffer)):
            num_updates, self._update_credit = off_policy.num_updates_due(
                cfg, self._update_credit, env_runner_results["num_env_steps_sampled"])
            with self.timers.time("learner_update_timer"):
                learner_results = off_policy.update_from_replay(
                    cfg, self.replay_buffer, self.learner_group, num_updates, sampled_lifetime)
        # 3. Send the new policy weights to the runners.
        with self.timers.time("synch_weights"):
            self.sync_env_runner_weights()
        learner = off_policy.mean_learner_results(learner_results)
        self.num_env_steps_trained_lifetime += learner["num_env_steps_trained"]
        if "alpha_value" not in learner:  # before learning: the temperature it will start from
            from rlcourse.algorithms.sac.sac_learner import resolve_target_entropy  # torch
            log_alpha = float(self.learner_group.get_weights()["log_alpha"])
            learner.update(alpha_value=math.exp(log_alpha), log_alpha_value=log_alpha,
                           target_entropy=resolve_target_entropy(cfg.target_entropy,
                                                                 self.action_space.shape[0]))
        return {"env_runners": env_runner_results, "learners": {DEFAULT_MODULE_ID: learner},
                "replay_buffer": {"num_env_steps_stored": len(self.replay_buffer),
                                  "num_episodes_stored": self.replay_buffer.get_num_episodes()}}

    def get_state(self) -> tuple[dict[str, Any], dict[str, Any]]:
        state, tensors = super().get_state()
        # Under "dqn", as DQN's (checkpoints of SAC(DQN) were written so).
        state["dqn"] = off_policy.replay_state(self.config, self.replay_buffer, self._update_credit)
        return state, tensors

    def _check_own_state(self, state: dict[str, Any]) -> None:
        buffer = self.replay_buffer
        off_policy.check_replay_state(state, "dqn", buffer.capacity, buffer.PRIORITIZED,
                                      self._module_spaces()[DEFAULT_MODULE_ID])

    def set_state(self, state: dict[str, Any], tensors: dict[str, Any]) -> None:
        super().set_state(state, tensors)
        self._update_credit = off_policy.set_replay_state(state["dqn"], self.replay_buffer)
