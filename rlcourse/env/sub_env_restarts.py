"""RestartOnFailure (`restart_failed_sub_environments=True`): a sub-env that crashes now and then
costs one episode, not the run."""

import contextlib
from typing import Any

import gymnasium as gym
import numpy as np

from rlcourse.env.env_runner import NonFiniteEnvData, first_non_finite

MAX_RESET_ATTEMPTS = 3


class SubEnvFailure(RuntimeError):
    """A sub-env kept failing right after being rebuilt: restarting it again would not help."""


class RestartOnFailure(gym.Wrapper):
    """Rebuilds the wrapped env with `env_creator(context)` when it raises or returns non-finite data:
    a failed step is reported as a truncation with `info["env_failure"]`, whose chunk the EnvRunner
    drops; a failed reset is retried up to `MAX_RESET_ATTEMPTS` times. More than
    `max_consecutive_failures` in a row (a broken env) raise SubEnvFailure instead."""

    def __init__(self, env_creator, context, max_consecutive_failures: int):
        super().__init__(env_creator(context))
        self.env_creator, self.context = env_creator, context
        self.max_consecutive_failures = max_consecutive_failures
        self.num_consecutive_failures = 0  # failures since the last good step

    def _rebuild(self, error: Exception) -> None:
        self.num_consecutive_failures += 1
        if self.num_consecutive_failures > self.max_consecutive_failures:
            name = self.env.spec.id if self.env.spec is not None else type(self.env.unwrapped).__name__
            raise SubEnvFailure(
                f"Sub-env {self.context.vector_index} of EnvRunner {self.context.worker_index} "
                f"({name}) failed {self.num_consecutive_failures} times in a row, each "
                f"time right after being rebuilt; the last error: {type(error).__name__}: {error}. "
                "Fix the env (its error is chained below), or raise config.fault_tolerance("
                "num_consecutive_sub_env_failures_tolerance=...) if it just fails often.") from error
        with contextlib.suppress(Exception):  # the broken env may fail to close too; it is dropped
            self.env.close()
        self.env = self.env_creator(self.context)

    def step(self, action: Any):
        try:
            obs, reward, terminated, truncated, info = self.env.step(action)
            _check_finite(obs, reward)
        except Exception as e:
            self._rebuild(e)
            # The observation is a placeholder: the EnvRunner drops this broken chunk.
            return (self.observation_space.sample(), 0.0, False, True,
                    {"env_failure": f"{type(e).__name__}: {e}"})
        self.num_consecutive_failures = 0
        return obs, reward, terminated, truncated, info

    def reset(self, **kwargs: Any):
        for attempt in range(MAX_RESET_ATTEMPTS):
            try:
                obs, info = self.env.reset(**kwargs)
                _check_finite(obs)
                return obs, info
            except Exception as e:
                if attempt == MAX_RESET_ATTEMPTS - 1:
                    raise  # the last attempt's error surfaces
                self._rebuild(e)


def _check_finite(obs: Any, reward: Any = 0.0) -> None:
    if reward is None or not np.isfinite(reward):
        raise NonFiniteEnvData(f"non-finite reward: {reward!r}")
    if first_non_finite(np.asarray(obs)) is not None:
        raise NonFiniteEnvData(f"non-finite obs: {obs!r}")
