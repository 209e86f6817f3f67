"""EnvRunner: what every runner shares (RLlib's `rllib/env/env_runner.py`): its module, seeding,
weights, the frame of `sample()`, metrics, and the guards on sampling (non-finite data, observation
shapes, timeouts)."""

import abc
import math
import os
import time
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
import ray

from rlcourse.core.rl_module.default_model_config import space_info
from rlcourse.core.rl_module.numpy_lstm import NumpyLSTM
from rlcourse.core.rl_module.numpy_mlp import InferenceModule, NumpyMLP
from rlcourse.env.env_runner_state import check_step_count
from rlcourse.env.registry import EnvCreator, env_name
from rlcourse.env.sample_result import SampleResult
from rlcourse.utils.checkpoints import CheckpointError
from rlcourse.utils.metrics.metrics_logger import MetricsLogger

if TYPE_CHECKING:
    from rlcourse.algorithms.algorithm_config import AlgorithmConfig

EPISODES_MODE_STEPS = 128  # env steps per round when sampling whole episodes


def build_inference_module(config: "AlgorithmConfig", observation_space: gym.Space,
                           action_space: gym.Space, seed: int | None, worker_index: int = 0
                           ) -> InferenceModule:
    """NumPy for the default module (no torch in this process); torch for a custom module class, on
    the runner's GPU if it has one. `worker_index` picks per-runner exploration (Ape-X's epsilons)."""
    head = config.get_action_head(action_space, worker_index)
    if config.rl_module_class is None:
        network_class = NumpyLSTM if config.model_config.get("use_lstm") else NumpyMLP
        network = network_class(space_info(observation_space, action_space), config.get_model_config())
        return InferenceModule(network, head, seed)
    from rlcourse.utils.framework import get_device  # imports torch: this runner holds torch anyway

    module = config.rl_module_class(observation_space, action_space, config.get_model_config())
    module.to(get_device(config, config.num_gpus_per_env_runner, "num_gpus_per_env_runner"))
    return module.get_inference_module(head, seed)


class NonFiniteEnvData(ValueError):
    """An env returned a NaN or infinite observation or reward (or a reward of None)."""


class SampleTimeoutError(TimeoutError):
    """A runner in this process took longer than `sample_timeout_s` for one sample request."""


def first_non_finite(values: np.ndarray) -> tuple[int, ...] | None:
    """The index of the first NaN or infinite entry of a float array; None if there is none (or the
    array is not numeric, e.g. dict observations for a custom module)."""
    if values.dtype.kind not in "fc" or np.isfinite(values).all():
        return None
    return tuple(int(k) for k in np.argwhere(~np.isfinite(values))[0])


def raise_if_shape_error(name: str, env: gym.vector.VectorEnv, error: Exception) -> None:
    """Raise a clear error naming the env, space and shape for numpy's "wrong shape", "same shape"
    (SYNC) or "could not broadcast" (ASYNC) errors about an observation; return for any other."""
    if not (isinstance(error, ValueError) and any(
            text in str(error) for text in ("wrong shape", "same shape", "could not broadcast"))):
        return
    space, got = env.single_observation_space, f"numpy says: {error}"
    if isinstance(space, gym.spaces.Box):  # a SYNC vector env keeps what each sub-env returned
        bad = [(i, np.shape(o)) for i, o in enumerate(getattr(env, "_env_obs", []))
               if o is not None and np.shape(o) != space.shape]
        got = f"sub-env {bad[0][0]} returned shape {bad[0][1]}" if bad else got
    raise ValueError(f"The {name} returned an observation that does not fit its "
                     f"observation_space {space} ({got}). Return observations of the space's "
                     "shape, or declare the space they have in the env's __init__.") from error


class EnvRunner(abc.ABC):
    """The shared part of a runner. A subclass builds its envs and module(s) in `__init__` (setting
    `num_envs`) and writes the abstract methods below, and `_set_epsilon` where it acts
    epsilon-greedily (DQN's runners)."""

    num_envs: int  # sub-envs stepped side by side
    env_to_module: Any = None  # the connector pipeline, where the runner has one
    frame_stacking: Any = None  # its FrameStackingEnvToModule: the module acts on its stacks
    # Environment variables a runner actor gets from the driver's process (its Ray runtime env):
    # secrets that must not travel in the config, which checkpoints and Tune results store.
    driver_env_vars: tuple[str, ...] = ()

    @classmethod  # noqa: B027 (a hook most runners leave empty, not an abstract method)
    def validate_config(cls, config: "AlgorithmConfig") -> None:
        """Check the settings only this runner class reads; validate() calls it for env_runner_cls
        (the external server's env_config keys)."""

    def __init__(self, config: "AlgorithmConfig", env_creator: EnvCreator | None = None,
                 worker_index: int = 0):
        self.config = config
        # Built alone (RLlib: `SingleAgentEnvRunner(config=config)`): own env creator and weights
        # (no env at all for a runner whose envs run elsewhere: env/external/).
        self.standalone = env_creator is None
        self.env_creator = (config.get_env_creator() if self.standalone and config.env is not None
                            else env_creator)
        self.worker_index = worker_index  # 0: the runner in the driver; actors count from 1
        self.env_name = env_name(config.env)
        self.name = f"env {self.env_name!r} on " + (
            f"{type(self).__name__} {worker_index}" if worker_index
            else f"the {type(self).__name__} in this process")
        self.seed = None if config.seed is None else config.seed + 10_000 * worker_index
        self.callbacks = config.callbacks_class() if config.callbacks_class else None
        self.metrics = MetricsLogger()  # what callbacks log here reaches train()'s results
        # The Ray node this runner runs on, when it is an actor (see EnvRunnerGroup.get_node_names).
        self.node_id = ray.get_runtime_context().get_node_id() if ray.is_initialized() else None
        self.weights_seq_no = -1  # which weights version the modules hold; -1: none yet
        self._needs_reset = True
        self._num_env_steps_lifetime = 0
        self._reset_metrics()

    def set_weights(self, weights: dict[str, Any], weights_seq_no: int | None = None,
                    env_to_module_state: list | None = None, epsilon: float | None = None) -> None:
        """Load weights version `weights_seq_no` (default: the next), with the connectors' merged
        statistics and DQN's epsilon; an older version than the one held is ignored (a late delivery)."""
        weights_seq_no = self.weights_seq_no + 1 if weights_seq_no is None else weights_seq_no
        if weights_seq_no > self.weights_seq_no:
            if epsilon is not None:
                self._set_epsilon(epsilon)
            self._set_module_weights(weights)
            if self.env_to_module is not None:
                self.env_to_module.set_state(env_to_module_state)
            self.weights_seq_no = weights_seq_no

    def _set_epsilon(self, epsilon: float) -> None:
        """Give the epsilon-greedy action head DQN's current epsilon (it comes with the weights)."""
        raise NotImplementedError(f"{type(self).__name__} has no epsilon-greedy action head: only "
                                  "DQN's single-agent runners take an epsilon.")

    # -- what each runner writes (RLlib's EnvRunner declares its own abstract methods) ----------

    @abc.abstractmethod
    def _sample_steps(self, steps: int, explore: bool, deadline: float | None) -> list:
        """Episode chunks of `steps` env steps per sub-env, episodes running on across calls."""

    @abc.abstractmethod
    def _sample_episodes(self, num_episodes: int, explore: bool, deadline: float | None) -> list:
        """`num_episodes` whole episodes, started afresh."""

    @abc.abstractmethod
    def _set_module_weights(self, weights: dict) -> None:
        """Load inference-only weights into the module(s)."""

    @abc.abstractmethod
    def _initialize_weights(self) -> None:
        """A standalone runner's first weights: from a freshly built module."""

    @abc.abstractmethod
    def get_spaces(self) -> Any:
        """(observation space, action space) of what the module(s) act on."""

    @abc.abstractmethod
    def get_state(self) -> dict:
        """What continues sampling here, as plain data (for checkpoints)."""

    @abc.abstractmethod
    def set_state(self, state: dict) -> None:
        """Take a `get_state()` back (already checked by `check_state`)."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Close the envs and whatever else the runner opened."""

    @abc.abstractmethod
    def _check_state(self, state: dict, where: str) -> None:
        """Raise CheckpointError for what a saved state holds beyond its step count."""

    def check_state(self, state: dict, where: str) -> str | None:
        """Why a saved `get_state()` would be refused (env_runner_state.py), or None: returned, not
        raised, so that a runner actor's answer reads as plainly as this process's."""
        try:
            check_step_count(state, where)
            self._check_state(state, where)
        except CheckpointError as e:
            return str(e)
        return None

    def ping(self) -> int:
        """Health probe: answers with this process's id (a new id means Ray restarted the actor)."""
        return os.getpid()

    def sample(self, num_timesteps: int | None = None, num_episodes: int | None = None,
               explore: bool | None = None) -> list:
        """Episode chunks covering at least `num_timesteps` env steps, or `num_episodes` complete
        episodes; with neither, `rollout_fragment_length` steps per sub-env."""
        if num_timesteps is not None and num_episodes is not None:
            raise ValueError("sample(): pass num_timesteps or num_episodes, not both.")
        if self.weights_seq_no < 0 and self.standalone:
            self._initialize_weights()
        if self.weights_seq_no < 0:
            raise RuntimeError(f"This {type(self).__name__} has no policy weights yet: call "
                               "set_weights() with a Learner's get_weights(inference_only=True) "
                               "first (an Algorithm does this for its runners).")
        explore = self.config.explore if explore is None else explore
        # Runner actors are timed by their EnvRunnerGroup; the runner in this process times itself.
        deadline = None if self.worker_index else time.monotonic() + self.config.sample_timeout_s
        if num_episodes is not None:
            episodes = self._sample_episodes(num_episodes, explore, deadline)
        else:
            steps = (self.config.get_rollout_fragment_length() if num_timesteps is None
                     else math.ceil(num_timesteps / self.num_envs))
            episodes = self._sample_steps(steps, explore, deadline)
        if self.callbacks:
            self.callbacks.on_sample_end(env_runner=self, metrics_logger=self.metrics,
                                         samples=episodes)
        return episodes

    def _check_deadline(self, deadline: float | None) -> None:
        """Raise SampleTimeoutError if `deadline` has passed (one clock read per env step)."""
        if deadline is not None and time.monotonic() > deadline:
            raise SampleTimeoutError(
                f"The {self.name} did not finish a sample request within sample_timeout_s="
                f"{self.config.sample_timeout_s} s. Its env may hang, or its episodes never end (whole "
                "episodes, as evaluation samples, need an end: wrap the env in gymnasium.wrappers."
                "TimeLimit). If sampling is just slow, raise config.env_runners(sample_timeout_s=...). "
                "Only the time between env steps is bounded in this process: to also end an env.step "
                "that never returns, sample on runner actors (num_env_runners >= 1, "
                "evaluation_num_env_runners >= 1), which are ended and restarted.")

    def _non_finite(self, field: str, where: str, t: int, value: Any,
                    restartable: bool = True) -> None:
        """Raise NonFiniteEnvData for `value`, the `field` ('obs' or 'reward') of `where` (a sub-env,
        an agent) at step `t`; `restartable`: sub-env restarts are a way out (single-agent only)."""
        what = "reward (NaN here also means None)" if field == "reward" else "observation"
        restart = (", or set config.fault_tolerance(restart_failed_sub_environments=True) to "
                   "rebuild a sub-env that returns them and drop its broken episode")
        raise NonFiniteEnvData(
            f"The {self.name}, {where}, returned a non-finite {what} at time step {t} (field "
            f"{field!r}): {value!r}. NaN or infinite data would make every weight NaN. Fix the env "
            f"(return finite float values, never None){restart if restartable else ''}.")

    def sample_and_get_metrics(self, weights: dict[str, Any] | None = None,
                               weights_seq_no: int = -1, env_to_module_state: list | None = None,
                               epsilon: float | None = None, **kwargs: Any) -> SampleResult:
        """Take `weights` if newer than ours (so a runner that Ray just restarted catches up), then
        `sample()` and `get_metrics()`: a group's sample request."""
        if weights is not None:
            self.set_weights(weights, weights_seq_no, env_to_module_state, epsilon)
        episodes = self.sample(**kwargs)
        buffers = self.env_to_module.pop_buffers() if self.env_to_module is not None else None
        return SampleResult(episodes, self.get_metrics(), self.weights_seq_no, os.getpid(), buffers)

    def _reset_metrics(self) -> None:
        self._episode_returns: list[float] = []  # finished since the last get_metrics()
        self._episode_lens: list[int] = []
        self._num_env_steps = 0
        self._num_sub_env_restarts = 0  # broken episodes dropped since the last get_metrics()

    def _count_steps(self, n: int) -> None:
        self._num_env_steps += n
        self._num_env_steps_lifetime += n

    def get_metrics(self) -> dict:
        """Episodes finished, steps taken and custom metrics logged since the last call (then
        forgets them)."""
        metrics = {"episode_returns": self._episode_returns, "episode_lens": self._episode_lens,
                   "num_env_steps_sampled": self._num_env_steps,
                   "num_sub_env_restarts": self._num_sub_env_restarts,
                   "custom_metrics": self.metrics.pop_logged()}
        self._reset_metrics()
        return metrics
