"""Environments that fail on purpose, for the fault-tolerance tests.

Runner actors cannot import the tests folder, so test modules ship these classes by value
(`ray.cloudpickle.register_pickle_by_value`).
"""

import os
import time
from pathlib import Path

import gymnasium as gym
import numpy as np


class CountingEnv(gym.Env):
    """Observation [t, noise]: t counts the steps since reset, so a batch shows any step that is
    missing, duplicated or crosses an episode boundary. Episodes last 20 to 60 steps; reward 1.

    env_config: `failure_rate` (probability that step() raises), `hang_marker` (a file path: if it
    does not exist yet, step 10 creates it and then hangs, so only the first process to get there
    hangs), `hang_always` (every step 2 hangs, in every process), `step_delay` (seconds each step
    sleeps, like a slow simulator), `never_ends` (episodes never end).
    """

    def __init__(self, config: dict | None = None):
        config = config or {}
        self.failure_rate = config.get("failure_rate", 0.0)
        self.hang_marker = config.get("hang_marker")
        self.step_delay = config.get("step_delay", 0.0)
        self.hang_always = config.get("hang_always", False)
        self.never_ends = config.get("never_ends", False)
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.t = 0
        self.length = 20

    def _obs(self) -> np.ndarray:
        return np.array([self.t, self.np_random.normal()], dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        self.length = np.inf if self.never_ends else int(self.np_random.integers(20, 61))
        return self._obs(), {}

    def step(self, action):
        if self.np_random.random() < self.failure_rate:
            raise RuntimeError(f"CountingEnv crashed at step {self.t} (simulated fault)")
        if self.hang_marker and self.t == 10 and not Path(self.hang_marker).exists():
            Path(self.hang_marker).write_text(str(os.getpid()))
            time.sleep(3600)
        if self.hang_always and self.t == 2:
            time.sleep(3600)
        if self.step_delay:
            time.sleep(self.step_delay)
        self.t += 1
        return self._obs(), 1.0, self.t >= self.length, False, {}


class BadValueEnv(CountingEnv):
    """CountingEnv that returns a bad value: env_config `bad` is "nan_obs", "inf_reward",
    "none_reward" or "long_obs" (shape (3,), not the space's (2,)); it comes at step `bad_at_step`
    of an episode (default 5), or, with `bad_rate`, on that fraction of steps instead.
    `bad_sub_env` limits it to one vector index."""

    def __init__(self, config: dict | None = None):
        super().__init__(config)
        config = config or {}
        self.bad = config.get("bad", "nan_obs")
        self.bad_at_step = config.get("bad_at_step", 5)
        self.bad_rate = config.get("bad_rate")
        sub_env = config.get("bad_sub_env")
        self.enabled = sub_env is None or getattr(config, "vector_index", 0) == sub_env

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        if self.bad_rate is not None:
            due = self.np_random.random() < self.bad_rate
        else:
            due = self.t == self.bad_at_step
        if self.enabled and due:
            if self.bad == "nan_obs":
                obs = np.array([np.nan, 0.0], dtype=np.float32)
            elif self.bad == "long_obs":
                obs = np.zeros(3, np.float32)
            elif self.bad == "inf_reward":
                reward = np.inf
            else:
                reward = None
        return obs, reward, terminated, truncated, info
