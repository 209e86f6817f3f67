"""Metrics: the MetricsLogger callbacks log custom values with (`log_value(key, value, reduce=...,
window=...)` reaches `result["env_runners"][key]`, reduced over all runners), the episode statistics
every result reports (smoothed over recent episodes, as RLlib's are), and timers."""

import copy
import math
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from itertools import zip_longest
from numbers import Real
from typing import Any

import numpy as np

from rlcourse.utils.checkpoints import CheckpointError
from rlcourse.utils.state_values import check_counter, check_number, check_numbers, is_count

REDUCE = {"mean": np.mean, "max": np.max, "min": np.min, "sum": np.sum}


@dataclass
class _Stat:
    reduce: str
    window: int | None
    clear_on_reduce: bool
    values: list[float] = field(default_factory=list)  # not yet reduced (sum) or in the window
    total: float = 0.0  # reduce="sum": what earlier results added up


class MetricsLogger:
    """Values logged under string keys, each key with one way of reducing them."""

    def __init__(self) -> None:
        self._stats: dict[str, _Stat] = {}

    def log_value(self, key: str, value: float, reduce: str = "mean", window: int | None = None,
                  clear_on_reduce: bool = False) -> None:
        """Record `value` under `key`. A key keeps the `reduce`, `window` and `clear_on_reduce` it
        was first logged with (every runner must log it the same way)."""
        if not isinstance(key, str) or not key:
            raise ValueError(f"log_value: key must be a non-empty string, got {key!r}.")
        if isinstance(value, np.ndarray) and value.size == 1:
            value = value.item()
        if not isinstance(value, Real) or isinstance(value, bool) or not math.isfinite(value):
            raise ValueError(f"log_value({key!r}, {value!r}): log one finite number (for an array, "
                             "log its mean, max or length).")
        self._stat(key, reduce, window, clear_on_reduce).values.append(float(value))

    def _stat(self, key: str, reduce: str, window: int | None, clear_on_reduce: bool) -> _Stat:
        for bad, args, fix in (
            (reduce not in REDUCE, f"reduce={reduce!r}", f"reduce must be one of {sorted(REDUCE)}."),
            (window is not None and (not isinstance(window, int) or window < 1), f"window={window!r}",
             "window must be a positive int (how many values to reduce over), or None."),
            (reduce == "sum" and window is not None, f"reduce='sum', window={window}",
             "a sum has no window; windows belong to mean, max and min."),
            (clear_on_reduce and reduce != "sum", "clear_on_reduce=True",
             "only reduce='sum' keeps a running total to clear.")):
            if bad:
                raise ValueError(f"log_value({key!r}, {args}): {fix}")
        how = (reduce, window, clear_on_reduce)
        stat = self._stats.setdefault(key, _Stat(*how))
        if (was := (stat.reduce, stat.window, stat.clear_on_reduce)) != how:
            raise ValueError(f"log_value({key!r}): (reduce, window, clear_on_reduce) was {was} "
                             f"before, now {how}: log one key one way everywhere.")
        return stat

    def pop_logged(self) -> dict[str, dict]:
        """What was logged since the last call, as plain data for a sample result (then forgets it);
        sums, maxima and minima already reduced (one number per runner is enough)."""
        logged = {}
        for key, stat in self._stats.items():
            if stat.values:
                values = stat.values
                if stat.reduce != "mean" and stat.window is None:
                    values = [float(REDUCE[stat.reduce](values))]
                logged[key] = {"values": values, "reduce": stat.reduce, "window": stat.window,
                               "clear_on_reduce": stat.clear_on_reduce}
                stat.values = []
        return logged

    def merge(self, logged: list[dict[str, dict]]) -> None:
        """Add what runners logged (their `pop_logged()`), interleaved one runner at a time, so a
        window too small for all keeps every runner's latest values."""
        by_key: dict[str, list[list[float]]] = {}
        for runner_logged in logged:
            for key, item in runner_logged.items():
                self._stat(key, item["reduce"], item["window"], item["clear_on_reduce"])
                by_key.setdefault(key, []).append(item["values"])
        for key, runs in by_key.items():
            self._stats[key].values.extend(
                v for turn in zip_longest(*runs) for v in turn if v is not None)

    def reduce(self) -> dict[str, float]:
        """Each key's value for this iteration's result (left out, not 0, if its window is empty)."""
        results = {}
        for key, stat in self._stats.items():
            if stat.reduce == "sum":
                this_iteration = float(np.sum(stat.values))
                stat.total = 0.0 if stat.clear_on_reduce else stat.total + this_iteration
                results[key] = this_iteration if stat.clear_on_reduce else stat.total
                stat.values = []
                continue
            if stat.window is not None:
                stat.values = stat.values[-stat.window:]  # kept: the window spans iterations
            if stat.values:
                results[key] = float(REDUCE[stat.reduce](stat.values))
            if stat.window is None:
                stat.values = []
        return results

    def get_state(self) -> dict[str, dict]:
        """Plain data for checkpoints: each key's settings, window and running total."""
        return {key: asdict(stat) for key, stat in self._stats.items()}

    @staticmethod
    def check_state(state: Any, where: str) -> None:
        """Refuse a saved `get_state()` that set_state would take as it is (CheckpointError)."""
        if not isinstance(state, dict):
            raise CheckpointError(f"{where} must be a dict of logged keys.")
        fields = set(_Stat.__dataclass_fields__)
        for key, stat in state.items():
            here = f"{where}[{key!r}]"
            if not isinstance(stat, dict) or set(stat) != fields:
                raise CheckpointError(f"{here} must be a dict with keys {sorted(fields)}.")
            window = stat["window"]
            if (stat["reduce"] not in REDUCE or not isinstance(stat["clear_on_reduce"], bool)
                    or window is not None and not (is_count(window) and window >= 1)):
                raise CheckpointError(f"{here} has another reduce, window or clear_on_reduce than "
                                      "log_value accepts.")
            check_numbers(stat["values"], f"{here}.values")
            check_number(stat["total"], f"{here}.total")

    def set_state(self, state: dict[str, dict]) -> None:
        """Continue from `get_state()`."""
        self._stats = {key: _Stat(**copy.deepcopy(stat)) for key, stat in state.items()}


# What Algorithm.train() adds to the env_runners results, beside what EpisodeStats reports.
GROUP_RESULTS = {"num_healthy_env_runners", "num_env_runner_restarts", "num_env_runner_failures"}
COUNTS = ("num_episodes", "num_env_steps_sampled", "num_sub_env_restarts")  # each also *_lifetime
PER_ID_RETURNS = ("agent_episode_returns", "module_episode_returns")  # multi-agent


class EpisodeStats:
    """Returns and lengths of the last `window` finished episodes (RLlib smooths over 100), and
    the custom metrics callbacks logged on the runners (`custom`, reduced as they were logged)."""

    def __init__(self, window: int = 100):
        self.returns: deque[float] = deque(maxlen=window)
        self.lens: deque[int] = deque(maxlen=window)
        self.lifetime = {f"{name}_lifetime": 0 for name in COUNTS}
        # Multi-agent: each agent's and each module's returns, in windows of their own.
        self.per_id: dict[str, dict[str, deque[float]]] = {key: {} for key in PER_ID_RETURNS}
        self.custom = MetricsLogger()

    @property
    def num_env_steps_sampled_lifetime(self) -> int:
        return self.lifetime["num_env_steps_sampled_lifetime"]

    def add(self, runner_metrics: list[dict]) -> dict:
        """Add what the runners reported this iteration; return the `env_runners/...` results."""
        counts = dict.fromkeys(COUNTS, 0)
        for m in runner_metrics:
            self.returns.extend(m["episode_returns"])
            self.lens.extend(m["episode_lens"])
            counts["num_episodes"] += len(m["episode_returns"])
            counts["num_env_steps_sampled"] += m["num_env_steps_sampled"]
            counts["num_sub_env_restarts"] += m.get("num_sub_env_restarts", 0)
            for key, windows in self.per_id.items():
                for name, returns in m.get(key, {}).items():
                    windows.setdefault(name, deque(maxlen=self.returns.maxlen)).extend(returns)
        returns, lens = self.returns or [math.nan], self.lens or [math.nan]  # NaN before any
        results = {"episode_return_mean": float(np.mean(returns)),
                   "episode_return_min": float(np.min(returns)),
                   "episode_return_max": float(np.max(returns)),
                   "episode_len_mean": float(np.mean(lens))}
        if self.per_id["agent_episode_returns"]:  # multi-agent: also per agent and module
            results.update({f"{key}_mean": {i: float(np.mean(v)) for i, v in windows.items()}
                            for key, windows in self.per_id.items()})
        for name, count in counts.items():
            self.lifetime[f"{name}_lifetime"] += count
            results.update({name: count, f"{name}_lifetime": self.lifetime[f"{name}_lifetime"]})
        self.custom.merge([m.get("custom_metrics", {}) for m in runner_metrics])
        custom = self.custom.reduce()
        if clash := sorted(custom.keys() & (results.keys() | GROUP_RESULTS)):
            raise ValueError(f"A callback logged the custom metric {clash[0]!r}, which is the name "
                             "of a built-in env_runners result: log it under another name.")
        return {**results, **custom}

    def get_state(self) -> dict:
        """Plain data for checkpoints: the window's episodes and the lifetime counters."""
        per_id = {key: {i: list(v) for i, v in windows.items()} for key, windows in self.per_id.items()}
        return {"episode_returns": list(self.returns), "episode_lens": list(self.lens),
                **self.lifetime, "custom_metrics": self.custom.get_state(), **per_id}

    def check_state(self, state: dict, where: str) -> None:
        """Refuse a saved `get_state()` before any of it is taken: finite returns, counts >= 0,
        each agent's and module's returns, the custom metrics (MetricsLogger.check_state)."""
        check_numbers(state.get("episode_returns"), f"{where}.episode_returns")
        lens = state.get("episode_lens")
        if not isinstance(lens, list) or not all(is_count(v) for v in lens):
            raise CheckpointError(f"{where}.episode_lens must be a list of ints >= 0.")
        for key in self.lifetime:
            check_counter(state.get(key), f"{where}.{key}")
        for key in PER_ID_RETURNS:
            per_id = state.get(key, {})
            if not isinstance(per_id, dict):
                raise CheckpointError(f"{where}.{key} must be a dict of lists of returns.")
            for i, returns in per_id.items():
                check_numbers(returns, f"{where}.{key}[{i!r}]")
        self.custom.check_state(state.get("custom_metrics", {}), f"{where}.custom_metrics")

    def set_state(self, state: dict) -> None:
        """Continue from `get_state()`."""
        window = self.returns.maxlen
        self.returns = deque(state["episode_returns"], maxlen=window)
        self.lens = deque(state["episode_lens"], maxlen=window)
        self.lifetime = {key: state[key] for key in self.lifetime}
        self.custom.set_state(state.get("custom_metrics", {}))  # none in older checkpoints
        self.per_id = {key: {i: deque(v, maxlen=window) for i, v in state.get(key, {}).items()}
                       for key in PER_ID_RETURNS}


class Timers:
    """`with timers.time("name"):` records how long the block took, in seconds."""

    def __init__(self) -> None:
        self.last: dict[str, float] = {}

    @contextmanager
    def time(self, name: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.last[name] = time.perf_counter() - start
