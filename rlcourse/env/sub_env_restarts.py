"""RestartOnFailure: a sub-env that raises is rebuilt, and its broken episode is marked for dropping.

Used when `config.fault_tolerance(restart_failed_sub_environments=True)`. A simulator that crashes
now and then should cost one episode, not the run:

  * `step()` raises -> the env is rebuilt with the same creator and EnvContext, and the step is
    reported as a truncation with `info["env_failure"]` set. The vector env resets the new env (as
    after any episode end) and the EnvRunner drops the broken chunk, so no transition into or out of
    the failure reaches a batch.
  * `reset()` raises -> the env is rebuilt and reset again, up to `MAX_RESET_ATTEMPTS` times.
"""

import contextlib
from typing import Any

import gymnasium as gym

MAX_RESET_ATTEMPTS = 3


class RestartOnFailure(gym.Wrapper):
    """Rebuilds the wrapped env with `env_creator(context)` when it raises."""

    def __init__(self, env_creator, context):
        super().__init__(env_creator(context))
        self.env_creator = env_creator
        self.context = context
        self.num_restarts = 0

    def _rebuild(self) -> None:
        with contextlib.suppress(Exception):  # the broken env may fail to close too; it is dropped
            self.env.close()
        self.env = self.env_creator(self.context)
        self.num_restarts += 1

    def step(self, action: Any):
        try:
            return self.env.step(action)
        except Exception as e:
            self._rebuild()
            # The observation is a placeholder: the EnvRunner drops this broken chunk.
            return (self.observation_space.sample(), 0.0, False, True,
                    {"env_failure": f"{type(e).__name__}: {e}"})

    def reset(self, **kwargs: Any):
        for _ in range(MAX_RESET_ATTEMPTS - 1):
            try:
                return self.env.reset(**kwargs)
            except Exception:
                self._rebuild()
        return self.env.reset(**kwargs)  # the last attempt's error surfaces
