"""ConnectorV2: one step of a connector pipeline (RLlib's base class, here a small callable): a batch
of observations in, the batch the module sees out; the defaults are a stateless step's."""

from typing import Any

import gymnasium as gym
import numpy as np

from rlcourse.utils.checkpoints import CheckpointError


class ConnectorV2:
    """A step between env and module; subclasses override `__call__` and what else they need."""

    input_observation_space: gym.Space | None = None

    def recompute_output_observation_space(self, input_observation_space: gym.Space,
                                           input_action_space: gym.Space) -> gym.Space:
        """The space of what `__call__` returns, given the space of what it takes."""
        return input_observation_space

    def __call__(self, observations: Any, *, update: bool = True) -> np.ndarray:
        """Process a batch of observations; `update=False` leaves any statistics as they are."""
        raise NotImplementedError

    def get_state(self) -> dict[str, Any]:
        """The step's state as plain data (see rlcourse/env/env_runner_state.py); {} when it has none."""
        return {}

    def check_state(self, state: Any, where: str) -> None:
        """Refuse (CheckpointError naming `where`) a saved state before a restore changes anything;
        a stateless step takes any dict."""
        if not isinstance(state, dict):
            raise CheckpointError(f"{where} must be a dict.")

    def set_state(self, state: dict[str, Any]) -> None:
        """Take a state from `get_state`, or merged statistics from `merge_states`."""

    def pop_buffer(self) -> dict[str, Any]:
        """What this step learned since the last call (plain data), then forget it."""
        return {}

    @staticmethod
    def merge_states(base: dict[str, Any] | None, buffers: list[dict[str, Any]]) -> dict[str, Any]:
        """`base` (merged before, or None) plus the runners' `pop_buffer()` results."""
        return {}
