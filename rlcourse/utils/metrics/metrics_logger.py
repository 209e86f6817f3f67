"""Metrics: the MetricsLogger callbacks log custom values with, the episode statistics every result
reports (smoothed over recent episodes, as RLlib's are), and timers.

A callback on an EnvRunner calls `metrics_logger.log_value(key, value, reduce=..., window=...)`;
the values travel with the samples and the Algorithm reduces every runner's into
`result["env_runners"][key]`: a mean, max or min over the last `window` values (window=None: those
since the last result), or a sum as a running total (clear_on_reduce=True: since the last result).
"""

import math
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import zip_longest
from numbers import Real

import numpy as np

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
        if reduce not in REDUCE:
            raise ValueError(f"log_value({key!r}, reduce={reduce!r}): reduce must be one of "
                             f"{sorted(REDUCE)}.")
        if window is not None and (not isinstance(window, int) or window < 1):
            raise ValueError(f"log_value({key!r}, window={window!r}): window must be a positive "
                             "int (how many values to reduce over), or None.")
        if reduce == "sum" and window is not None:
            raise ValueError(f"log_value({key!r}, reduce='sum', window={window}): a sum is a running "
                             "total (or, with clear_on_reduce=True, this iteration's); windows "
                             "belong to mean, max and min.")
        if clear_on_reduce and reduce != "sum":
            raise ValueError(f"log_value({key!r}, clear_on_reduce=True): only reduce='sum' keeps a "
                             "running total to clear; a mean with window=None already uses only "
                             "the values since the last result.")
        stat = self._stats.setdefault(key, _Stat(reduce, window, clear_on_reduce))
        if (stat.reduce, stat.window, stat.clear_on_reduce) != (reduce, window, clear_on_reduce):
            raise ValueError(
                f"log_value({key!r}): it was logged with reduce={stat.reduce!r}, "
                f"window={stat.window}, clear_on_reduce={stat.clear_on_reduce} before and now with "
                f"reduce={reduce!r}, window={window}, clear_on_reduce={clear_on_reduce}: log one "
                "key one way everywhere.")
        return stat

    def pop_logged(self) -> dict[str, dict]:
        """What was logged since the last call, as plain data for a sample result (then forgets it).
        Sums, maxima and minima are reduced here already: one number per runner is enough."""
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
        """Add what runners logged (their `pop_logged()`). Each key's values are interleaved, one
        from each runner in turn, so a window that cannot hold them all keeps every runner's latest
        values, not only the last runner's."""
        by_key: dict[str, list[list[float]]] = {}
        for runner_logged in logged:
            for key, item in runner_logged.items():
                self._stat(key, item["reduce"], item["window"], item["clear_on_reduce"])
                by_key.setdefault(key, []).append(item["values"])
        for key, runs in by_key.items():
            self._stats[key].values.extend(
                v for turn in zip_longest(*runs) for v in turn if v is not None)

    def reduce(self) -> dict[str, float]:
        """Each key's value for this iteration's result. A mean, max or min with no value in its
        window this iteration is left out rather than reported as 0."""
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
        return {key: {"reduce": s.reduce, "window": s.window, "clear_on_reduce": s.clear_on_reduce,
                      "values": list(s.values), "total": s.total} for key, s in self._stats.items()}

    def set_state(self, state: dict[str, dict]) -> None:
        """Continue from `get_state()`."""
        self._stats = {key: _Stat(s["reduce"], s["window"], s["clear_on_reduce"],
                                  list(s["values"]), s["total"]) for key, s in state.items()}

# What Algorithm.train() adds to the env_runners results, beside what EpisodeStats reports.
GROUP_RESULTS = {"num_healthy_env_runners", "num_env_runner_restarts", "num_env_runner_failures"}


def episode_metrics(episodes: list) -> dict:
    """What a runner reports, for exactly these whole `episodes` (evaluation counts these); for
    MultiAgentEpisodes also each agent's and each module's returns."""
    metrics = {"episode_returns": [e.get_return() for e in episodes],
               "episode_lens": [len(e) for e in episodes],
               "num_env_steps_sampled": sum(len(e) for e in episodes), "custom_metrics": {}}
    if episodes and hasattr(episodes[0], "get_agent_returns"):
        agents: dict = {}
        modules: dict = {}
        for episode in episodes:
            for agent_id, ret in episode.get_agent_returns().items():
                agents.setdefault(agent_id, []).append(ret)
                modules.setdefault(episode.module_for(agent_id), []).append(ret)
        metrics.update(agent_episode_returns=agents, module_episode_returns=modules)
    return metrics


class EpisodeStats:
    """Returns and lengths of the last `window` finished episodes (RLlib smooths over 100), and
    the custom metrics callbacks logged on the runners (`custom`, reduced as they were logged)."""

    def __init__(self, window: int = 100):
        self.returns: deque[float] = deque(maxlen=window)
        self.lens: deque[int] = deque(maxlen=window)
        # Multi-agent: each agent's and each module's returns, in windows of their own.
        self.per_agent: dict[str, deque[float]] = {}
        self.per_module: dict[str, deque[float]] = {}
        self.num_episodes_lifetime = 0
        self.num_env_steps_sampled_lifetime = 0
        self.num_sub_env_restarts_lifetime = 0
        self.custom = MetricsLogger()

    def add(self, runner_metrics: list[dict]) -> dict:
        """Add what the runners reported this iteration; return the `env_runners/...` results."""
        new_returns = [r for m in runner_metrics for r in m["episode_returns"]]
        self.returns.extend(new_returns)
        self.lens.extend(length for m in runner_metrics for length in m["episode_lens"])
        steps = sum(m["num_env_steps_sampled"] for m in runner_metrics)
        restarts = sum(m.get("num_sub_env_restarts", 0) for m in runner_metrics)
        self.num_episodes_lifetime += len(new_returns)
        self.num_env_steps_sampled_lifetime += steps
        self.num_sub_env_restarts_lifetime += restarts
        self.custom.merge([m.get("custom_metrics", {}) for m in runner_metrics])
        for key, windows in (("agent_episode_returns", self.per_agent),
                             ("module_episode_returns", self.per_module)):
            for m in runner_metrics:
                for name, returns in m.get(key, {}).items():
                    windows.setdefault(name, deque(maxlen=self.returns.maxlen)).extend(returns)
        results = {**self.summary(), "num_episodes": len(new_returns),
                   "num_episodes_lifetime": self.num_episodes_lifetime,
                   "num_env_steps_sampled": steps,
                   "num_env_steps_sampled_lifetime": self.num_env_steps_sampled_lifetime,
                   "num_sub_env_restarts": restarts,
                   "num_sub_env_restarts_lifetime": self.num_sub_env_restarts_lifetime}
        custom = self.custom.reduce()
        if clash := sorted(custom.keys() & (results.keys() | GROUP_RESULTS)):
            raise ValueError(f"A callback logged the custom metric {clash[0]!r}, which is the name "
                             "of a built-in env_runners result: log it under another name.")
        return {**results, **custom}

    def get_state(self) -> dict:
        """Plain data for checkpoints: the window's episodes and the lifetime counters."""
        return {"episode_returns": list(self.returns), "episode_lens": list(self.lens),
                "num_episodes_lifetime": self.num_episodes_lifetime,
                "num_env_steps_sampled_lifetime": self.num_env_steps_sampled_lifetime,
                "num_sub_env_restarts_lifetime": self.num_sub_env_restarts_lifetime,
                "custom_metrics": self.custom.get_state(),
                "agent_episode_returns": {k: list(v) for k, v in self.per_agent.items()},
                "module_episode_returns": {k: list(v) for k, v in self.per_module.items()}}

    def set_state(self, state: dict) -> None:
        """Continue from `get_state()`."""
        self.returns.clear()
        self.returns.extend(state["episode_returns"])
        self.lens.clear()
        self.lens.extend(state["episode_lens"])
        self.num_episodes_lifetime = state["num_episodes_lifetime"]
        self.num_env_steps_sampled_lifetime = state["num_env_steps_sampled_lifetime"]
        self.num_sub_env_restarts_lifetime = state["num_sub_env_restarts_lifetime"]
        self.custom.set_state(state.get("custom_metrics", {}))  # none in older checkpoints
        for key, windows in (("agent_episode_returns", self.per_agent),
                             ("module_episode_returns", self.per_module)):
            windows.clear()
            windows.update({k: deque(v, maxlen=self.returns.maxlen)
                            for k, v in state.get(key, {}).items()})

    def summary(self) -> dict:
        """Means over the window; multi-agent also per agent and per module (RLlib's
        `agent_episode_returns_mean` and `module_episode_returns_mean`, dicts by id)."""
        per_id = {}
        if self.per_agent:
            per_id = {"agent_episode_returns_mean": {k: float(np.mean(v))
                                                     for k, v in self.per_agent.items()},
                      "module_episode_returns_mean": {k: float(np.mean(v))
                                                      for k, v in self.per_module.items()}}
        if not self.returns:
            return {"episode_return_mean": float("nan"), "episode_return_min": float("nan"),
                    "episode_return_max": float("nan"), "episode_len_mean": float("nan"), **per_id}
        return {"episode_return_mean": float(np.mean(self.returns)),
                "episode_return_min": float(np.min(self.returns)),
                "episode_return_max": float(np.max(self.returns)),
                "episode_len_mean": float(np.mean(self.lens)), **per_id}


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
