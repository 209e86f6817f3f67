"""MeanStdFilter: observations normalized to mean 0, standard deviation 1 by running statistics.

Each runner normalizes with `running_stats` and keeps a `buffer` of what it saw since it reported;
the Algorithm merges the buffers (Chan et al.'s parallel formula) and sends the result back, so all
runners normalize alike and no observation counts twice.
"""

from typing import Any

import gymnasium as gym
import numpy as np

from rlcourse.connectors.connector_v2 import ConnectorV2
from rlcourse.utils.checkpoints import CheckpointError
from rlcourse.utils.serialization import from_plain, to_plain
from rlcourse.utils.state_values import check_counter, check_like, decode
from rlcourse.utils.validation import ConfigError

EPSILON = 1e-8  # added to the standard deviation, so a constant element does not divide by 0


class RunningStat:
    """Count, mean and M2 (sum of squared deviations from the mean) of arrays of one shape."""

    def __init__(self, shape: tuple[int, ...]):
        self.n = 0
        self.mean = np.zeros(shape, dtype=np.float64)
        self.m2 = np.zeros(shape, dtype=np.float64)

    @property
    def std(self) -> np.ndarray:
        """Sample standard deviation; 1 until two values were seen (nothing to scale by yet)."""
        return np.sqrt(self.m2 / (self.n - 1)) if self.n >= 2 else np.ones_like(self.mean)

    def push(self, batch: np.ndarray) -> None:
        """Add a batch of values (first axis: the values)."""
        batch = np.asarray(batch, dtype=np.float64)
        other = RunningStat(self.mean.shape)
        other.n, other.mean = len(batch), batch.mean(axis=0)
        other.m2 = ((batch - other.mean) ** 2).sum(axis=0)
        self.update(other)

    def update(self, other: "RunningStat") -> None:
        """Merge in the statistics of other values (Chan et al.'s parallel formula)."""
        if other.n == 0:
            return
        n = self.n + other.n
        delta = other.mean - self.mean
        self.mean = self.mean + delta * (other.n / n)
        self.m2 = self.m2 + other.m2 + delta ** 2 * (self.n * other.n / n)
        self.n = n

    def to_plain(self) -> dict[str, Any]:
        return {"n": self.n, "mean": to_plain(self.mean), "m2": to_plain(self.m2)}

    @staticmethod
    def check_plain(state: Any, where: str, shape: tuple[int, ...]) -> None:
        """Refuse a saved `to_plain()` unless a count >= 0 with a finite float64 mean and M2 of
        `shape`, M2 >= 0 (a sum of squares)."""
        if not isinstance(state, dict) or set(state) != {"n", "mean", "m2"}:
            raise CheckpointError(f"{where} must be a dict with keys n, mean and m2.")
        check_counter(state["n"], f"{where}.n")
        for key in ("mean", "m2"):
            value = decode(state[key], f"{where}.{key}")
            check_like(value, np.zeros(shape), f"{where}.{key}")
            if key == "m2" and (value < 0).any():
                raise CheckpointError(f"{where}.m2 holds (a variance) negative values.")

    @staticmethod
    def from_plain(state: dict[str, Any]) -> "RunningStat":
        mean = from_plain(state["mean"])
        stat = RunningStat(mean.shape)
        stat.n, stat.mean, stat.m2 = int(state["n"]), mean, from_plain(state["m2"])
        return stat


class MeanStdFilter(ConnectorV2):
    """Normalize Box observations, then clip to +-`clip_by_value`; Discrete ones pass unchanged."""

    def __init__(self, *, de_mean_to_zero: bool = True, de_std_to_one: bool = True,
                 clip_by_value: float | None = 10.0, update_stats: bool = True):
        if clip_by_value is not None and not (isinstance(clip_by_value, int | float)
                                              and clip_by_value > 0):
            raise ConfigError("clip_by_value", clip_by_value, "MeanStdFilter(clip_by_value=...) "
                              "takes a positive number, or None for no clipping.")
        self.de_mean_to_zero = de_mean_to_zero
        self.de_std_to_one = de_std_to_one
        self.clip_by_value = clip_by_value
        self.update_stats = update_stats
        self.running_stats: RunningStat | None = None  # None: observations it leaves as they are
        self.buffer: RunningStat | None = None

    def recompute_output_observation_space(self, input_observation_space: gym.Space,
                                           input_action_space: gym.Space) -> gym.Space:
        self.input_observation_space = space = input_observation_space
        if isinstance(space, gym.spaces.Discrete | gym.spaces.MultiDiscrete):
            return space
        if not isinstance(space, gym.spaces.Box):
            raise ConfigError("env_to_module_connector", "MeanStdFilter()",
                              f"MeanStdFilter normalizes Box observations, not {space}: put "
                              "FlattenObservations() before it.", "env_runners")
        self.running_stats, self.buffer = RunningStat(space.shape), RunningStat(space.shape)
        bound = np.inf if self.clip_by_value is None else self.clip_by_value
        return gym.spaces.Box(-bound, bound, space.shape, np.float32)

    def __call__(self, observations: np.ndarray, *, update: bool = True) -> np.ndarray:
        if self.running_stats is None:
            return observations
        observations = np.asarray(observations)
        if update and self.update_stats:
            self.running_stats.push(observations)
            self.buffer.push(observations)
        out = observations.astype(np.float64)
        if self.de_mean_to_zero:
            out = out - self.running_stats.mean
        if self.de_std_to_one:
            out = out / (self.running_stats.std + EPSILON)
        if self.clip_by_value is not None:
            out = np.clip(out, -self.clip_by_value, self.clip_by_value)
        return out.astype(np.float32)

    def get_state(self) -> dict[str, Any]:
        if self.running_stats is None:
            return {}
        return {"running_stats": self.running_stats.to_plain(), "buffer": self.buffer.to_plain()}

    def check_state(self, state: Any, where: str) -> None:
        """Refuse statistics set_state would take as they are (RunningStat.check_plain)."""
        super().check_state(state, where)
        for name in ("running_stats", "buffer") if self.running_stats is not None and state else ():
            if name in state or name == "running_stats":
                RunningStat.check_plain(state.get(name), f"{where}.{name}",
                                        self.running_stats.mean.shape)

    def set_state(self, state: dict[str, Any]) -> None:
        """A saved state (with "buffer") as it is; merged statistics plus this filter's own buffer."""
        if self.running_stats is None or not state:
            return
        running = RunningStat.from_plain(state["running_stats"])
        if "buffer" in state:
            self.buffer = RunningStat.from_plain(state["buffer"])
        else:
            running.update(self.buffer)
        self.running_stats = running

    def pop_buffer(self) -> dict[str, Any]:
        if self.running_stats is None or self.buffer.n == 0:
            return {}
        buffer, self.buffer = self.buffer, RunningStat(self.buffer.mean.shape)
        return {"running_stats": buffer.to_plain()}

    @staticmethod
    def merge_states(base: dict[str, Any] | None, buffers: list[dict[str, Any]]) -> dict[str, Any]:
        stats = [RunningStat.from_plain(s["running_stats"]) for s in [base, *buffers] if s]
        for stat in stats[1:]:
            stats[0].update(stat)
        return {"running_stats": stats[0].to_plain()} if stats else {}
