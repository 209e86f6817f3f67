import gymnasium as gym
import numpy as np


class Corridor(gym.Env):
    """Walk right from cell 0 to the last cell of a corridor."""

    def __init__(self, config=None):
        config = config or {}  # rlcourse passes the env_config (an EnvContext), or nothing
        self.length = config.get("length", 10)
        self.max_episode_steps = config.get("max_episode_steps", 50)
        self.observation_space = gym.spaces.Box(0.0, self.length - 1, shape=(1,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)  # seeds self.np_random
        self.position, self.steps = 0, 0
        return np.array([self.position], dtype=np.float32), {}

    def step(self, action):
        self.position = max(0, self.position - 1) if action == 0 else self.position + 1
        self.steps += 1
        terminated = self.position == self.length - 1
        truncated = not terminated and self.steps >= self.max_episode_steps
        reward = 1.0 if terminated else -0.1
        return np.array([self.position], dtype=np.float32), reward, terminated, truncated, {}
