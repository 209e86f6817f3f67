"""PixelGridWorld: the course's GridWorld seen as a small image, a pixel task that PPO with a CNN
learns on two CPUs in seconds (lesson 12), where Atari takes hours.

Observation: [size * pixels_per_cell, size * pixels_per_cell, 3] float32 in {0, 1}, channels-last
as RLlib's images: channel 0 the agent, 1 the pits, 2 the goal. Registered as "PixelGridWorld".
"""

import gymnasium as gym
import numpy as np

from rlcourse.course.envs import GridWorld
from rlcourse.env.registry import register_env


class PixelGridWorld(GridWorld):
    """GridWorld (same rules, rewards and env_config) whose observation is a picture of the grid;
    env_config's `pixels_per_cell` (default 2) sets its resolution."""

    def __init__(self, config: dict | None = None):
        config = config if config is not None else {}
        self.pixels_per_cell = int(config.get("pixels_per_cell", 2))
        if self.pixels_per_cell < 1:
            raise ValueError(f"PixelGridWorld: pixels_per_cell must be >= 1, got "
                             f"{self.pixels_per_cell}.")
        super().__init__({k: v for k, v in config.items() if k != "pixels_per_cell"})
        self.worker_index = getattr(config, "worker_index", 0)
        self.vector_index = getattr(config, "vector_index", 0)
        side = self.size * self.pixels_per_cell
        self.observation_space = gym.spaces.Box(0.0, 1.0, (side, side, 3), np.float32)
        self._background = np.zeros((self.size, self.size, 3), np.float32)
        self._background[..., 1] = self.pits
        self._background[(*self.goal, 2)] = 1.0

    def _obs(self) -> np.ndarray:
        cells = self._background.copy()
        cells[(*self.position, 0)] = 1.0
        return cells.repeat(self.pixels_per_cell, axis=0).repeat(self.pixels_per_cell, axis=1)


register_env("PixelGridWorld", PixelGridWorld)
