"""FlattenObservations: (nested) Dict and Tuple observations as one float32 vector, as RLlib's: Box
parts flattened, Discrete and MultiDiscrete parts one-hot, in the space's (sorted) key order."""

from functools import cache
from typing import Any

import gymnasium as gym
import numpy as np

from rlcourse.connectors.connector_v2 import ConnectorV2
from rlcourse.utils.validation import ConfigError


def _flat_size(space: gym.Space) -> int:
    if isinstance(space, gym.spaces.Box | gym.spaces.MultiBinary):
        return int(np.prod(space.shape))
    if isinstance(space, gym.spaces.Discrete):
        return int(space.n)
    if isinstance(space, gym.spaces.MultiDiscrete):
        return int(np.sum(space.nvec))
    if isinstance(space, gym.spaces.Dict):
        return sum(_flat_size(s) for s in space.spaces.values())
    if isinstance(space, gym.spaces.Tuple):
        return sum(_flat_size(s) for s in space.spaces)
    raise ConfigError("env_to_module_connector", "FlattenObservations()", f"it flattens Box, "
                      f"Discrete, MultiDiscrete, MultiBinary, Dict and Tuple spaces, not {space}.",
                      "env_runners")


@cache
def _identity(n: int) -> np.ndarray:
    return np.eye(n, dtype=np.float32)  # (indexing it copies: the cached array stays as it is)


def _one_hot(shifted: np.ndarray, values: np.ndarray, space: gym.Space, n: Any) -> list[np.ndarray]:
    """One-hot rows of the int64 `values` minus the space's start (`shifted`, [B] or [B, k] for k
    parts of sizes `n`), refused unless all are in 0..n-1: the index would raise IndexError, or
    take the last row for -1. One pass per batch: negatives, read as unsigned, are huge."""
    unsigned = shifted.view(np.uint64)
    if unsigned.max(initial=0) >= n if shifted.ndim == 1 else (unsigned >= n).any():
        bad = next(x for x in values.reshape(len(values), *space.shape) if x not in space)
        raise ValueError(f"FlattenObservations got the observation {bad.tolist()}, outside the env's "
                         f"observation_space {space}: make the env return values in its space "
                         "(Discrete(n, start=s) holds s..s+n-1), or widen the space.")
    if shifted.ndim == 1:
        return [_identity(n)[shifted]]
    return [_identity(int(size))[shifted[:, j]] for j, size in enumerate(n)]


def _flatten(batch: Any, space: gym.Space) -> list[np.ndarray]:
    """[B, k] float32 pieces of a batch of `space` values, in the order of the space's parts."""
    if isinstance(space, gym.spaces.Dict):
        return [piece for key, sub in space.spaces.items() for piece in _flatten(batch[key], sub)]
    if isinstance(space, gym.spaces.Tuple):
        return [piece for part, sub in zip(batch, space.spaces, strict=True)
                for piece in _flatten(part, sub)]
    values = np.asarray(batch)
    if isinstance(space, gym.spaces.Discrete):  # (Python ints: compared as uint64, not float)
        return _one_hot(values.astype(np.int64) - int(space.start), values, space, int(space.n))
    if isinstance(space, gym.spaces.MultiDiscrete):
        shifted = (values.reshape(len(values), -1).astype(np.int64)
                   - np.asarray(space.start).reshape(1, -1))
        return _one_hot(shifted, values, space, np.asarray(space.nvec, np.uint64).reshape(-1))
    return [values.reshape(len(values), -1).astype(np.float32)]


class FlattenObservations(ConnectorV2):
    """Turn a batch of (possibly nested) Dict or Tuple observations into a [B, n] float32 array."""

    def recompute_output_observation_space(self, input_observation_space: gym.Space,
                                           input_action_space: gym.Space) -> gym.Space:
        self.input_observation_space = input_observation_space
        n = _flat_size(input_observation_space)
        return gym.spaces.Box(-np.inf, np.inf, (n,), np.float32)

    def __call__(self, observations: Any, *, update: bool = True) -> np.ndarray:
        return np.concatenate(_flatten(observations, self.input_observation_space), axis=1)
