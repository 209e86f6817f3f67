"""The course's own environments, importable so that EnvRunner actors can build them by name.

`GridWorld` (lesson 03): a small grid with pits, learned by PPO in seconds; it reads `env_config`,
passes gymnasium's env checker and draws itself.

`LatencyBoundCartPole` (lesson 04): CartPole-v1 whose `step()` first waits, like a slow simulator (a
game engine, a robot, a physics server) that the env talks to. Waiting costs no CPU, so more runners
keep adding env steps per second long after CPU-bound CartPole has used up every core. Use it as
`config.environment(LatencyBoundCartPole, env_config={"step_latency_s": 0.005})`.

`StatelessCartPole` (RLlib's example env): CartPole-v1 that shows only the cart's position and the
pole's angle, not their velocities: a policy must remember earlier observations to act well
(`model_config={"use_lstm": True}`). Registered as "StatelessCartPole".
"""

import time
from typing import Any

import gymnasium as gym
import numpy as np

from rlcourse.env.registry import register_env

DEFAULT_STEP_LATENCY_S = 0.005


class LatencyBoundCartPole(gym.Wrapper):
    """CartPole-v1 (500-step limit included) that sleeps `step_latency_s` in every `step()`."""

    def __init__(self, config: dict | None = None):
        config = config or {}
        super().__init__(gym.make("CartPole-v1"))
        self.step_latency_s = float(config.get("step_latency_s", DEFAULT_STEP_LATENCY_S))

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        time.sleep(self.step_latency_s)  # the simulator is busy elsewhere; this process idles
        return self.env.step(action)


class StatelessCartPole(gym.ObservationWrapper):
    """CartPole-v1 (500-step limit included) observing [x, theta] only: no velocities. RLlib's
    has no step limit; the limit here keeps an evaluation finite and is above RLlib's mark, 350."""

    def __init__(self, config: dict | None = None):
        super().__init__(gym.make("CartPole-v1"))
        high = self.env.observation_space.high[[0, 2]]
        self.observation_space = gym.spaces.Box(-high, high, dtype=np.float32)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return observation[[0, 2]]


register_env("StatelessCartPole", StatelessCartPole)

UP, RIGHT, DOWN, LEFT = range(4)
MOVES = np.array([[-1, 0], [0, 1], [1, 0], [0, -1]])  # (row, col) change of each action
CELL_PX = 32
COLORS = {"floor": (236, 236, 236), "line": (200, 200, 200), "pit": (40, 62, 140),
          "start": (250, 226, 150), "goal": (70, 170, 80), "agent": (214, 48, 49)}


class GridWorld(gym.Env):
    """Walk to the goal in the bottom-right corner without falling into a pit.

    A row of pits crosses the middle of the grid; its one gap is in the middle column. Each episode
    starts on a random safe cell, so the agent meets the goal early and learns a way from everywhere.
    Observation: the agent's cell, `row * size + col` (Discrete, as in FrozenLake; the default
    network takes it one-hot, from the FlattenObservations connector). Actions: 0 up, 1 right,
    2 down, 3 left; walking into the border stays.
    Rewards: +1 at the goal and -1 in a pit (both terminate the episode), -0.01 for any other step.
    The episode is truncated after `max_episode_steps`.

    env_config: `size` (cells per side, >= 3; default 5), `slip` (probability that a move goes in a
    random direction instead; default 0), `max_episode_steps` (default 4 * size) and
    `render_mode` (None or "rgb_array"). An EnvContext also brings `worker_index` and `vector_index`.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}

    def __init__(self, config: dict | None = None):
        # Which runner and which sub-env slot built this env (0, 0 outside an EnvRunner).
        self.worker_index = getattr(config, "worker_index", 0)
        self.vector_index = getattr(config, "vector_index", 0)
        config = dict(config or {})
        unknown = set(config) - {"size", "slip", "max_episode_steps", "render_mode"}
        if unknown:  # a typo in env_config should fail loudly, not train on the defaults
            raise ValueError(f"GridWorld: unknown env_config keys {sorted(unknown)}; it takes "
                             "size, slip, max_episode_steps and render_mode.")
        self.size = int(config.get("size", 5))
        self.slip = float(config.get("slip", 0.0))
        self.max_episode_steps = int(config.get("max_episode_steps", 4 * self.size))
        self.render_mode = config.get("render_mode")
        if self.size < 3 or not 0.0 <= self.slip <= 1.0 or self.max_episode_steps < 1:
            raise ValueError(f"GridWorld: need size >= 3, 0 <= slip <= 1 and max_episode_steps >= 1; "
                             f"got size={self.size}, slip={self.slip}, "
                             f"max_episode_steps={self.max_episode_steps}.")
        if self.render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"GridWorld: render_mode must be None or 'rgb_array', "
                             f"got {self.render_mode!r}.")
        self.observation_space = gym.spaces.Discrete(self.size * self.size)
        self.action_space = gym.spaces.Discrete(4)
        self.pits = np.zeros((self.size, self.size), dtype=bool)
        self.pits[self.size // 2, :] = True
        self.pits[self.size // 2, self.size // 2] = False
        self.goal = (self.size - 1, self.size - 1)
        safe = ~self.pits
        safe[self.goal] = False
        self.start_cells = np.argwhere(safe)  # where an episode may start
        self.start = self.position = (0, 0)
        self.steps = 0

    def _obs(self) -> np.int64:
        # np.int64, the type Discrete.sample() gives (gymnasium's checker accepts it and int).
        return np.int64(self.position[0] * self.size + self.position[1])

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.int64, dict]:
        super().reset(seed=seed)  # seeds self.np_random, which picks the start (and slips)
        row, col = self.start_cells[self.np_random.integers(len(self.start_cells))]
        self.start = self.position = (int(row), int(col))
        self.steps = 0
        return self._obs(), {}

    def step(self, action: int) -> tuple[np.int64, float, bool, bool, dict]:
        if self.slip and self.np_random.random() < self.slip:
            action = int(self.np_random.integers(4))
        row, col = np.clip(np.array(self.position) + MOVES[int(action)], 0, self.size - 1)
        self.position = (int(row), int(col))
        self.steps += 1
        if self.position == self.goal:
            reward, terminated = 1.0, True
        elif self.pits[self.position]:
            reward, terminated = -1.0, True
        else:
            reward, terminated = -0.01, False
        # A time limit is truncation, not termination: the agent could have gone on.
        truncated = not terminated and self.steps >= self.max_episode_steps
        return self._obs(), reward, terminated, truncated, {}

    def render(self) -> np.ndarray | None:
        """An RGB image of the grid (H, W, 3), with `CELL_PX` pixels per cell."""
        if self.render_mode != "rgb_array":
            return None
        return draw_grid(self.size, self.pits, self.goal, self.position, self.start)


def draw_grid(size: int, pits: np.ndarray, goal: tuple[int, int],
              agent: tuple[int, int] | None = None, start: tuple[int, int] | None = None
              ) -> np.ndarray:
    """Pixels of a grid: floor, pits, goal, and (if given) the start cell and the agent as a disc."""
    cells = np.full((size, size, 3), COLORS["floor"], dtype=np.uint8)
    cells[pits] = COLORS["pit"]
    if start is not None:
        cells[start] = COLORS["start"]
    cells[goal] = COLORS["goal"]
    image = cells.repeat(CELL_PX, axis=0).repeat(CELL_PX, axis=1)
    image[::CELL_PX, :] = image[:, ::CELL_PX] = COLORS["line"]
    if agent is not None:
        yy, xx = np.mgrid[:CELL_PX, :CELL_PX]
        disc = (yy - CELL_PX / 2) ** 2 + (xx - CELL_PX / 2) ** 2 <= (CELL_PX * 0.32) ** 2
        row, col = agent
        image[row * CELL_PX:(row + 1) * CELL_PX, col * CELL_PX:(col + 1) * CELL_PX][disc] = \
            COLORS["agent"]
    return image
