"""Reward engineering (lesson 03): env wrappers that change the reward the agent learns from, and a
record of the env's own return, which is what a learning curve should compare.

    env = PotentialShaping(TaskReturn(GridWorld(context)), grid_potential(7), gamma=0.99)
    config.callbacks(LogTaskReturn)  # result["env_runners"]["task_return"]: the env's own return

Potential-based shaping (Ng, Harada & Russell 1999) adds F = gamma * Phi(s') - Phi(s) to each
reward, with Phi = 0 once the episode has terminated: every policy's value changes by -Phi(s_0)
only, so the optimal policy stays the same. Scale a reward with gymnasium's `TransformReward`.
"""

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from rlcourse.callbacks.callbacks import Callbacks

TASK_RETURN = "task_return"  # the info key, and the metric LogTaskReturn logs


class TaskReturn(gym.Wrapper):
    """Sums the wrapped env's own rewards; the last step's info holds the sum as "task_return".
    Put it innermost, so wrappers outside it may change the reward without changing the record."""

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        self.task_return = 0.0
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.task_return += float(reward)
        if terminated or truncated:
            info = {**info, TASK_RETURN: self.task_return}
        return obs, reward, terminated, truncated, info


class PotentialShaping(gym.Wrapper):
    """reward + gamma * Phi(s') - Phi(s); Phi(s') = 0 when s' ends the episode (terminated), so a
    shaped return is the env's minus Phi(s_0) (discounted with the same gamma as the learner)."""

    def __init__(self, env: gym.Env, potential: Callable[[Any], float], gamma: float):
        super().__init__(env)
        self.potential, self.gamma = potential, gamma

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        obs, info = self.env.reset(**kwargs)
        self.last_potential = self.potential(obs)
        return obs, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        potential = 0.0 if terminated else self.potential(obs)
        shaped = reward + self.gamma * potential - self.last_potential
        self.last_potential = potential
        return obs, shaped, terminated, truncated, info


def grid_potential(size: int) -> Callable[[Any], float]:
    """Phi(cell) for GridWorld: minus the Manhattan distance to the goal (bottom-right corner), in
    units of the longest such distance; pits are ignored (the shaping only hints at a direction)."""
    def potential(cell: Any) -> float:
        row, col = divmod(int(cell), size)
        return -((size - 1 - row) + (size - 1 - col)) / (2 * (size - 1))
    return potential


class LogTaskReturn(Callbacks):
    """Logs each finished episode's "task_return" (TaskReturn's) as result["env_runners"]
    ["task_return"], the mean of the last 100 episodes, as episode_return_mean is. It reads the
    last step's info, which only `on_episode_step` sees (a call per step: fine for small envs)."""

    def on_episode_step(self, *, episode: Any, metrics_logger: Any, **kwargs: Any) -> None:
        info = episode.get_infos(-1)
        if TASK_RETURN in info:
            metrics_logger.log_value(TASK_RETURN, float(np.asarray(info[TASK_RETURN])), window=100)
