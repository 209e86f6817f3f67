"""RestartOnFailure: a sub-env that raises is rebuilt, and its broken episode is marked for dropping.

Used when `config.fault_tolerance(restart_failed_sub_environments=True)`. A simulator that crashes
now and then should cost one episode, not the run:

  * `step()` raises, or returns a NaN or infinite observation or reward (env_runner.py) -> the
    env is rebuilt with the same creator and EnvContext, and the step is reported as a truncation
    with `info["env_failure"]` set. The vector env resets the new env (as after any episode end) and
    the EnvRunner drops the broken chunk, so no transition into or out of the failure reaches a batch.
  * `reset()` raises (or returns a non-finite observation) -> the env is rebuilt and reset again, up
    to `MAX_RESET_ATTEMPTS` times; then the last error surfaces.
  * An env that fails again and again, with no good step in between, is broken rather than unlucky:
    after `num_consecutive_sub_env_failures_tolerance` such restarts in a row, `SubEnvFailure` ends
    the run instead of rebuilding it forever (each rebuild's broken episode is dropped, so training
    would otherwise wait for data that never comes).
"""

import contextlib
from typing import Any

import gymnasium as gym

from rlcourse.env.env_runner import NonFiniteEnvData, non_finite_field

MAX_RESET_ATTEMPTS = 3


class SubEnvFailure(RuntimeError):
    """A sub-env kept failing right after being rebuilt: restarting it again would not help."""


class RestartOnFailure(gym.Wrapper):
    """Rebuilds the wrapped env with `env_creator(context)` when it raises or returns non-finite data.
    """

    def __init__(self, env_creator, context, max_consecutive_failures: int):
        super().__init__(env_creator(context))
        self.env_creator = env_creator
        self.context = context
        self.max_consecutive_failures = max_consecutive_failures
        self.num_restarts = 0
        self.num_consecutive_failures = 0  # failures since the last good step

    def _rebuild(self, error: Exception) -> None:
        self.num_consecutive_failures += 1
        if self.num_consecutive_failures > self.max_consecutive_failures:
            raise SubEnvFailure(
                f"Sub-env {self.context.vector_index} of EnvRunner {self.context.worker_index} "
                f"({_name(self.env)}) failed {self.num_consecutive_failures} times in a row, each "
                f"time right after being rebuilt; the last error: {type(error).__name__}: {error}. "
                "Fix the env (its error is chained below), or raise config.fault_tolerance("
                "num_consecutive_sub_env_failures_tolerance=...) if it just fails often.") from error
        with contextlib.suppress(Exception):  # the broken env may fail to close too; it is dropped
            self.env.close()
        self.env = self.env_creator(self.context)
        self.num_restarts += 1

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
        for _ in range(MAX_RESET_ATTEMPTS - 1):
            try:
                return self._checked_reset(**kwargs)
            except Exception as e:
                self._rebuild(e)
        return self._checked_reset(**kwargs)  # the last attempt's error surfaces

    def _checked_reset(self, **kwargs: Any):
        obs, info = self.env.reset(**kwargs)
        _check_finite(obs)
        return obs, info


def _check_finite(obs: Any, reward: Any = 0.0) -> None:
    field = non_finite_field(obs, reward)
    if field is not None:
        value = reward if field == "reward" else obs
        raise NonFiniteEnvData(f"non-finite {field}: {value!r}")


def _name(env: gym.Env) -> str:
    """The env's gymnasium id, or its class name."""
    return env.spec.id if env.spec is not None else type(env.unwrapped).__name__
