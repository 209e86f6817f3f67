"""Episode callbacks on an EnvRunner (`on_episode_start`, `on_episode_step`, `on_episode_end`): the
runner steps its sub-envs into NumPy buffers, so only a runner with callbacks keeps a `RunningEpisode`
per sub-env, and records steps only if `on_episode_step` is overridden (a Python call per step).
"""

from collections import deque
from typing import Any

import numpy as np

from rlcourse.callbacks.callbacks import Callbacks, overrides
from rlcourse.utils.serialization import NotPlainData, from_plain, to_plain


class RunningEpisode:
    """An episode while it runs, as on_episode_start and on_episode_step see it: everything since its
    reset, and `custom_data` for what your hooks collect (the finished episode carries it on)."""

    def __init__(self, first_obs: np.ndarray, first_info: dict):
        self.custom_data: dict[str, Any] = {}
        # Copies: the vector env reuses its arrays (copy=False), and runner buffers should not live on.
        self._observations = [np.array(first_obs)]
        self._infos = [first_info]
        self._actions: list = []
        self._rewards: list[float] = []

    @property
    def t(self) -> int:
        """Env steps taken since the reset."""
        return len(self._actions)

    def add_step(self, action: Any, reward: float, obs: np.ndarray, info: dict) -> None:
        self._actions.append(np.array(action))
        self._rewards.append(float(reward))
        self._observations.append(np.array(obs))
        self._infos.append(info)

    def get_observations(self, indices: int | slice = -1) -> Any:
        """Observation(s) by index, like a list: -1 is the latest (t+1 of them, from the reset's)."""
        return np.asarray(self._observations)[indices]

    def get_actions(self, indices: int | slice = -1) -> Any:
        return np.asarray(self._actions)[indices]

    def get_rewards(self, indices: int | slice = -1) -> Any:
        return np.asarray(self._rewards, dtype=np.float32)[indices]

    def get_infos(self, indices: int | slice = -1) -> Any:
        return self._infos[indices]

    def get_return(self) -> float:
        return float(sum(self._rewards))

    def get_state(self) -> dict:
        """Plain data for checkpoints (without infos: after a restore, earlier steps' read as {})."""
        try:
            custom_data = to_plain(self.custom_data)
        except NotPlainData as e:
            raise NotPlainData(f"episode.custom_data holds something a checkpoint cannot store "
                               f"({e}): keep numbers, strings, NumPy arrays, and lists and "
                               "string-keyed dicts of those.") from None
        return {"custom_data": custom_data, "observations": to_plain(self._observations),
                "actions": to_plain(self._actions), "rewards": self._rewards}

    @classmethod
    def from_state(cls, state: dict) -> "RunningEpisode":
        observations = from_plain(state["observations"])
        episode = cls(observations[0], {})
        episode.custom_data = from_plain(state["custom_data"])
        episode._observations, episode._infos = observations, [{} for _ in observations]
        episode._actions, episode._rewards = from_plain(state["actions"]), list(state["rewards"])
        return episode


def sub_env_info(infos: dict, i: int) -> dict:
    """Sub-env `i`'s info dict out of a vector env's infos (arrays with `_key` masks)."""
    return {k: v[i] for k, v in infos.items()
            if not k.startswith("_") and k not in ("final_obs", "final_info")
            and infos.get("_" + k, np.ones(i + 1, bool))[i]}


class EpisodeHooks:
    """Keeps one RunningEpisode per sub-env and calls the episode hooks of `env_runner.callbacks`."""

    def __init__(self, env_runner: Any):
        self.runner = env_runner
        self.callbacks: Callbacks = env_runner.callbacks
        self.records_steps = overrides(type(self.callbacks), "on_episode_step")
        self.running: list[RunningEpisode] = []
        self.ended: list[deque[dict]] = []  # per sub-env: custom_data of episodes not yet sliced

    def _kwargs(self, i: int) -> dict[str, Any]:
        return {"env_runner": self.runner, "metrics_logger": self.runner.metrics,
                "env": self.runner.env, "env_index": i, "rl_module": self.runner.module}

    def _start(self, i: int, obs: np.ndarray, info: dict) -> None:
        self.running[i] = RunningEpisode(obs, info)
        self.callbacks.on_episode_start(episode=self.running[i], **self._kwargs(i))

    def on_reset(self, obs: np.ndarray, infos: dict) -> None:
        """Every sub-env starts a new episode (what ran before is not continued)."""
        self.running = [None] * len(obs)
        self.ended = [deque() for _ in obs]
        for i in range(len(obs)):
            self._start(i, obs[i], sub_env_info(infos, i))

    def on_step(self, actions: np.ndarray, rewards: np.ndarray, terminated: np.ndarray,
                truncated: np.ndarray, next_obs: np.ndarray, last_obs: dict[int, np.ndarray],
                infos: dict) -> None:
        """After one vector step: record it, and start a new episode where one ended (the
        sub-env reset in the same step; `last_obs` has its last observation, processed as
        `next_obs` is, unless the sub-env failed: then the env's made-up one)."""
        for i, episode in enumerate(self.running):
            done = terminated[i] or truncated[i]
            if self.records_steps:
                if done:
                    obs = last_obs[i] if i in last_obs else infos["final_obs"][i]
                    info = sub_env_info(infos["final_info"], i)
                else:
                    obs, info = next_obs[i], sub_env_info(infos, i)
                episode.add_step(actions[i], rewards[i], obs, info)
                self.callbacks.on_episode_step(episode=episode, **self._kwargs(i))
            if done:
                self.ended[i].append(episode.custom_data)
                self._start(i, next_obs[i], sub_env_info(infos, i))

    def get_state(self) -> list[dict]:
        """The running episodes, between samples (when no ended episode waits to be sliced)."""
        return [episode.get_state() for episode in self.running]

    def set_state(self, state: list[dict]) -> None:
        """Continue the running episodes of `get_state()`: no hook sees them start again."""
        self.running = [RunningEpisode.from_state(episode) for episode in state]
        self.ended = [deque() for _ in state]

    def custom_data(self, i: int, is_done: bool) -> dict:
        """The custom_data of the episode that sub-env `i`'s next chunk (in time order) belongs to."""
        return self.ended[i].popleft() if is_done else self.running[i].custom_data

    def on_episode_end(self, i: int, episode: Any) -> None:
        self.callbacks.on_episode_end(episode=episode, **self._kwargs(i))
