"""Episode statistics smoothed over recent episodes, custom metrics from callbacks, and timers."""

import time
from collections import deque
from contextlib import contextmanager

import numpy as np

from rlcourse.utils.metrics.metrics_logger import MetricsLogger

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
