"""DQN (Mnih et al. 2015) with double Q, dueling heads, n-step returns and prioritized replay.

Off-policy: runners act epsilon-greedily and every step they take goes into a replay buffer; the
learner trains on batches drawn from the buffer, old and new steps alike, so each step is learned
from many times. The loss lives in `dqn_learner.py`; this file has the settings and the loop.
"""

from typing import Any

import gymnasium as gym
import numpy as np

from rlcourse.algorithms.algorithm import DEFAULT_POLICY, Algorithm
from rlcourse.algorithms.algorithm_config import AlgorithmConfig, NotProvided
from rlcourse.algorithms.config_validation import check_bool, check_int, check_number
from rlcourse.core.rl_module.rl_module_spec import RLModuleSpec
from rlcourse.env.registry import env_name, probe_spaces
from rlcourse.utils.checkpoints import CheckpointError
from rlcourse.utils.replay_buffers import EpisodeReplayBuffer, PrioritizedEpisodeReplayBuffer
from rlcourse.utils.schedules import scheduled_value
from rlcourse.utils.validation import fail

REPLAY_BUFFERS = {"EpisodeReplayBuffer": EpisodeReplayBuffer,
                  "PrioritizedEpisodeReplayBuffer": PrioritizedEpisodeReplayBuffer}
REPLAY_BUFFER_KEYS = {"type", "capacity", "alpha", "beta"}


class DQNConfig(AlgorithmConfig):
    """DQN's settings, with RLlib's names and, where not said otherwise, RLlib's defaults. These
    solve CartPole-v1 (a return of 450) in 72-94k env steps, seeds 0-4 (benchmarks/dqn_cartpole.py)."""

    @property
    def algo_class(self) -> type["DQN"]:
        return DQN

    def get_default_learner_class(self) -> type:
        from rlcourse.algorithms.dqn.dqn_learner import DQNLearner  # torch: where learners run
        return DQNLearner

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        from rlcourse.algorithms.dqn.dqn_rl_module import DefaultDQNModule  # torch
        return RLModuleSpec(module_class=DefaultDQNModule)

    default_inference_module_class = "rlcourse.algorithms.dqn.numpy_q_module:NumpyQModule"
    # Not RLlib's [256, 256]: the CartPole figures above were measured with [64, 64], which updates
    # several times faster on two cores. (vf_share_layers is PPO's and IMPALA's: DQN has no vf.)
    default_model_config = {"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh"}

    def __init__(self) -> None:
        super().__init__()
        self.lr = 5e-4
        self.train_batch_size_per_learner = 32
        self.minibatch_size = None  # one gradient step per replay batch
        self.num_epochs = 1
        self.grad_clip = 40.0
        self.double_q = True
        self.dueling = True
        # Not RLlib's defaults (n_step 1, epsilon down to 0.05, one update per sample round):
        # 3-step returns and the final epsilon of RLlib's tuned CartPole example, and a replay
        # ratio of 8 (a batch of 32 per 4 env steps sampled). On CartPole, seeds 0-2, a ratio of
        # 16 needed about as many env steps (67-76k against 72-88k) for twice the updates;
        # n_step 1 and a final epsilon of 0.05 needed 155k (seed 0).
        self.n_step = 3
        self.epsilon: list = [[0, 1.0], [10_000, 0.02]]
        self.target_network_update_freq = 500
        self.tau = 1.0
        self.num_steps_sampled_before_learning_starts = 1000
        self.training_intensity: float | None = 8.0
        self.replay_buffer_config: dict = {"type": "PrioritizedEpisodeReplayBuffer",
                                           "capacity": 50_000, "alpha": 0.6, "beta": 0.4}
        self.store_buffer_in_checkpoints = False

    def training(self, *, double_q: bool = NotProvided, dueling: bool = NotProvided,
                 n_step: int = NotProvided, epsilon: list = NotProvided,
                 target_network_update_freq: int = NotProvided, tau: float = NotProvided,
                 num_steps_sampled_before_learning_starts: int = NotProvided,
                 training_intensity: float | None = NotProvided,
                 replay_buffer_config: dict = NotProvided,
                 store_buffer_in_checkpoints: bool = NotProvided, **kwargs: Any) -> "DQNConfig":
        """DQN's own settings plus the shared ones (gamma, lr, train_batch_size_per_learner, ...).

        `epsilon`: [[timestep, value], ...], linear in between, by env steps sampled.
        `target_network_update_freq`: env steps sampled between target updates (by `tau`).
        `training_intensity`: env steps trained per env step sampled (the replay ratio); None: one
        update per training_step. `replay_buffer_config` is merged into the current one.
        """
        super().training(**kwargs)
        if replay_buffer_config is not NotProvided and isinstance(replay_buffer_config, dict):
            replay_buffer_config = {**self.replay_buffer_config, **replay_buffer_config}
        return self._set(double_q=double_q, dueling=dueling, n_step=n_step, epsilon=epsilon,
                         target_network_update_freq=target_network_update_freq, tau=tau,
                         num_steps_sampled_before_learning_starts=(
                             num_steps_sampled_before_learning_starts),
                         training_intensity=training_intensity,
                         replay_buffer_config=replay_buffer_config,
                         store_buffer_in_checkpoints=store_buffer_in_checkpoints)

    def get_model_config(self) -> dict:
        return {**self.model_config, "dueling": self.dueling}

    def validate(self) -> None:
        super().validate()
        check_bool(self, "double_q", "True (the online net picks the next action) or False")
        check_bool(self, "dueling", "True (value + advantage heads) or False")
        check_replay_settings(self, tau_hint="1.0 copies the online network into the target; "
                              "0.005 moves it slowly.")
        if self.rl_module_class is not None:
            from rlcourse.algorithms.dqn.dqn_rl_module import DefaultDQNModule
            if not issubclass(self.rl_module_class, DefaultDQNModule):
                fail(self, "rl_module_class", "DQN's learner and runners need Q-values and a target "
                     "network: subclass rlcourse.algorithms.dqn.dqn_rl_module.DefaultDQNModule.")
        self._check_epsilon()
        self._check_replay_buffer_config()
        _, action_space = probe_spaces(self.get_env_creator(), self.env_config, env_name(self.env))
        if not isinstance(action_space, gym.spaces.Discrete):
            fail(self, "env", f"its action space is {action_space}, and DQN picks one of finitely "
                 "many actions (gymnasium.spaces.Discrete). Use an env with Discrete actions, or "
                 "PPO for continuous (Box) actions.")

    def _check_epsilon(self) -> None:
        schedule = self.epsilon
        fix = ("use [[timestep, value], ...] with timesteps that increase and values in [0, 1], "
               "e.g. [[0, 1.0], [10000, 0.05]].")
        if not (isinstance(schedule, list | tuple) and schedule and all(
                isinstance(p, list | tuple) and len(p) == 2 for p in schedule)):
            fail(self, "epsilon", fix)
        steps = [p[0] for p in schedule]
        if not all(isinstance(v, int | float) and 0 <= v <= 1 for _, v in schedule):
            fail(self, "epsilon", fix)
        if not all(isinstance(t, int) and t >= 0 for t in steps) or any(
                b <= a for a, b in zip(steps, steps[1:], strict=False)):
            fail(self, "epsilon", f"its timesteps {steps} do not increase: " + fix)

    def _check_replay_buffer_config(self) -> None:
        """A hook: ApexDQNConfig overrides it to accept its shard count."""
        check_replay_buffer_config(self)


def check_replay_settings(config: AlgorithmConfig, tau_hint: str) -> None:
    """The settings every replay-based algorithm shares (DQN, SAC): n-step returns, target updates,
    when learning starts, the replay ratio, and whether checkpoints hold the buffer."""
    check_bool(config, "store_buffer_in_checkpoints", "True or False")
    check_int(config, "n_step", 1)
    check_number(config, "tau", 0.0, 1.0, low_open=True, hint=tau_hint)
    check_int(config, "target_network_update_freq", 0)
    check_int(config, "num_steps_sampled_before_learning_starts", 0)
    if config.training_intensity is not None:
        check_number(config, "training_intensity", 0.0, low_open=True,
                     hint="Or None for one update per training_step.")


def check_replay_buffer_config(config: AlgorithmConfig) -> None:
    """The replay buffer's type, capacity (at least a train batch) and priority settings (DQN, SAC)."""
    rb = config.replay_buffer_config
    if not isinstance(rb, dict) or set(rb) - REPLAY_BUFFER_KEYS:
        fail(config, "replay_buffer_config", f"pass a dict with keys {sorted(REPLAY_BUFFER_KEYS)}.")
    if rb.get("type") not in REPLAY_BUFFERS:
        fail(config, "replay_buffer_config", f"'type' must be one of {sorted(REPLAY_BUFFERS)}.")
    capacity = rb.get("capacity")
    if not isinstance(capacity, int) or capacity < config.total_train_batch_size:
        fail(config, "replay_buffer_config", f"its capacity {capacity!r} (env steps) is smaller "
             f"than a train batch ({config.total_train_batch_size} rows): raise 'capacity' "
             "(e.g. 50000) or lower train_batch_size_per_learner.")
    if rb["type"] == "PrioritizedEpisodeReplayBuffer":
        if not (isinstance(rb.get("alpha"), int | float) and rb["alpha"] >= 0):
            fail(config, "replay_buffer_config", "'alpha' must be a number >= 0 (0: uniform).")
        if not (isinstance(rb.get("beta"), int | float) and 0 <= rb["beta"] <= 1):
            fail(config, "replay_buffer_config", "'beta' must be a number in [0, 1].")


class DQN(Algorithm):
    """Sample, store, replay: each training_step samples `rollout_fragment_length` steps per sub-env,
    adds them to the buffer, then trains on replayed batches as `training_intensity` says."""

    @classmethod
    def get_default_config(cls) -> DQNConfig:
        return DQNConfig()

    def setup(self, config) -> None:
        super().setup(config)
        rb = config.replay_buffer_config
        if rb["type"] == "PrioritizedEpisodeReplayBuffer":
            self.replay_buffer = PrioritizedEpisodeReplayBuffer(rb["capacity"], rb["alpha"],
                                                                rb["beta"], seed=config.seed)
        else:
            self.replay_buffer = EpisodeReplayBuffer(rb["capacity"], seed=config.seed)
        self._update_credit = 0.0  # updates owed to the replay ratio, fractions carried over
        self._rng = np.random.default_rng(config.seed)  # compute_actions(explore=True)
        self.env_runner_group.sync_weights(self._runner_weights())  # the schedule's first epsilon

    def current_epsilon(self) -> float:
        """What the epsilon schedule gives for the env steps sampled so far."""
        return scheduled_value(self.config.epsilon,
                               self.episode_stats.num_env_steps_sampled_lifetime)

    def _runner_weights(self) -> dict[str, np.ndarray]:
        """The Q-network's weights, and the epsilon to explore with (numpy_q_module.py)."""
        return {**super()._runner_weights(), "epsilon": np.float32(self.current_epsilon())}

    def _exploration_metrics(self) -> dict[str, float]:
        """What the runners explore with now, for result["env_runners"] (SAC: nothing to add)."""
        return {"epsilon": self.current_epsilon()}

    def compute_actions(self, observations: np.ndarray, explore: bool = False) -> np.ndarray:
        """Greedy actions; with `explore`, epsilon-greedy ones with the current epsilon, as the
        runners act (not samples from a softmax of the Q-values)."""
        actions = super().compute_actions(observations, explore=False)
        if explore:
            explore_rows = self._rng.random(len(actions)) < self.current_epsilon()
            random_actions = self.action_space.start + self._rng.integers(
                self.action_space.n, size=len(actions))
            actions = np.where(explore_rows, random_actions, actions)
        return actions

    def _num_updates_due(self, num_env_steps_sampled: int) -> int:
        """Updates owed for this step's samples, so that env steps trained / env steps sampled =
        training_intensity on average (a fraction of an update is carried over)."""
        cfg = self.config
        if cfg.training_intensity is None:
            return 1
        self._update_credit += (cfg.training_intensity * num_env_steps_sampled
                                / cfg.total_train_batch_size)
        updates = int(self._update_credit)
        self._update_credit -= updates
        return updates

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
        if (sampled_lifetime >= cfg.num_steps_sampled_before_learning_starts
                and len(self.replay_buffer) >= cfg.total_train_batch_size):
            with self.timers.time("learner_update_timer"):
                for _ in range(self._num_updates_due(env_runner_results["num_env_steps_sampled"])):
                    batch = self.replay_buffer.sample(cfg.total_train_batch_size, n_step=cfg.n_step,
                                                      gamma=cfg.gamma)
                    results = self.learner_group.update_from_batch(
                        batch, num_env_steps_sampled_lifetime=sampled_lifetime)
                    self.replay_buffer.update_priorities(batch["indices"], results.pop("td_error"))
                    learner_results.append(results)
        # 3. Send the new weights and the current epsilon to the runners.
        with self.timers.time("synch_weights"):
            self.env_runner_group.sync_weights(self._runner_weights())
        trained = sum(r["num_env_steps_trained"] for r in learner_results)
        self.num_env_steps_trained_lifetime += trained
        learner = {k: float(np.mean([r[k] for r in learner_results]))
                   for k in learner_results[0]} if learner_results else {}
        learner.update(num_env_steps_trained=trained, num_updates=len(learner_results))
        env_runner_results.update(self._exploration_metrics())
        return {"env_runners": env_runner_results, "learners": {DEFAULT_POLICY: learner},
                "replay_buffer": {"num_env_steps_stored": len(self.replay_buffer),
                                  "num_episodes_stored": self.replay_buffer.get_num_episodes()}}

    # -- checkpoints: the replay buffer is saved only with store_buffer_in_checkpoints ------------

    def get_state(self) -> tuple[dict[str, Any], dict[str, Any]]:
        state, tensors = super().get_state()
        state["dqn"] = {"update_credit": self._update_credit,
                        "replay_buffer": (self.replay_buffer.get_state()
                                          if self.config.store_buffer_in_checkpoints else None)}
        return state, tensors

    def set_state(self, state: dict[str, Any], tensors: dict[str, Any]) -> None:
        saved_buffer = state["dqn"]["replay_buffer"]
        if saved_buffer is not None and saved_buffer["capacity"] != self.replay_buffer.capacity:
            raise CheckpointError(f"The checkpoint's replay buffer holds {saved_buffer['capacity']} "
                                  f"env steps, this algorithm's {self.replay_buffer.capacity}: "
                                  "use the checkpoint's replay_buffer_config, or "
                                  "Algorithm.from_checkpoint(path).")
        super().set_state(state, tensors)
        self._update_credit = state["dqn"]["update_credit"]
        if saved_buffer is not None:
            self.replay_buffer.set_state(saved_buffer)
        self.env_runner_group.sync_weights(self._runner_weights())  # with the restored epsilon
