"""The course's own multi-agent envs (MultiAgentEnv's dict API), importable by name on every runner.

`MeetingGrid` (cooperative): two agents on a small grid share one reward for meeting on a cell.
`ConnectFour` (competitive, turn-based): two players drop discs; only the player to move observes,
so agents act at different times. `heuristic_action` is a fixed opponent (win, else block, else a
random column near the centre) to measure a self-play policy's win rate against; `render()` draws it.
`MultiAgentCartPole`: N independent CartPole-v1 copies (`make_multi_agent`), for scaling checks.

Importing this module registers the three under those names with `register_env`.
"""

from typing import Any

import gymnasium as gym
import numpy as np

from rlcourse.env.multi_agent_env import ALL, MultiAgentEnv, check_action_dict, make_multi_agent
from rlcourse.env.registry import register_env

MultiAgentCartPole = make_multi_agent("CartPole-v1")
MultiAgentCartPole.__name__ = MultiAgentCartPole.__qualname__ = "MultiAgentCartPole"

MOVES = np.array([[0, 0], [-1, 0], [0, 1], [1, 0], [0, -1]])  # stay, up, right, down, left


def _check_keys(name: str, config: dict, allowed: set[str]) -> dict:
    unknown = set(config) - allowed
    if unknown:  # a typo in env_config should fail loudly, not train on the defaults
        raise ValueError(f"{name}: unknown env_config keys {sorted(unknown)}; it takes "
                         f"{', '.join(sorted(allowed))}.")
    return dict(config)


class MeetingGrid(MultiAgentEnv):
    """Two agents start on different cells of a `size` x `size` grid and must meet on one cell.

    Both act in every step (stay, up, right, down, left) and see [own row, own col, other row,
    other col] scaled to 0..1. They share each reward: -0.02 per step apart, +1 for meeting (which
    ends the episode, terminated); truncated after `max_episode_steps`. PPO learns it in seconds.
    env_config: `size` (>= 2, default 4), `max_episode_steps` (default 4 * size).
    """

    def __init__(self, config: dict | None = None):
        config = _check_keys("MeetingGrid", config or {}, {"size", "max_episode_steps"})
        self.size = int(config.get("size", 4))
        self.max_episode_steps = int(config.get("max_episode_steps", 4 * self.size))
        if self.size < 2 or self.max_episode_steps < 1:
            raise ValueError(f"MeetingGrid: need size >= 2 and max_episode_steps >= 1, got "
                             f"size={self.size}, max_episode_steps={self.max_episode_steps}.")
        self.possible_agents = ["agent_0", "agent_1"]
        self.agents = list(self.possible_agents)
        self.observation_spaces = {a: gym.spaces.Box(0.0, 1.0, (4,), np.float32) for a in self.agents}
        self.action_spaces = {a: gym.spaces.Discrete(5) for a in self.agents}
        self.positions = np.zeros((2, 2), dtype=np.int64)
        self.steps = 0
        super().__init__()

    def _obs(self) -> dict[str, np.ndarray]:
        flat = (self.positions / (self.size - 1)).astype(np.float32).ravel()
        return {"agent_0": flat, "agent_1": np.concatenate([flat[2:], flat[:2]])}

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        cells = self.np_random.choice(self.size * self.size, size=2, replace=False)
        self.positions = np.stack(np.divmod(cells, self.size), axis=1)
        self.steps = 0
        return self._obs(), {a: {} for a in self.agents}

    def step(self, action_dict: dict) -> tuple[dict, dict, dict, dict, dict]:
        if action_dict.keys() != set(self.agents):
            check_action_dict("MeetingGrid", action_dict, self.agents)
        moves = MOVES[[int(action_dict[a]) for a in self.possible_agents]]
        self.positions = np.clip(self.positions + moves, 0, self.size - 1)
        self.steps += 1
        met = bool((self.positions[0] == self.positions[1]).all())
        truncated = not met and self.steps >= self.max_episode_steps
        reward = 1.0 if met else -0.02
        flags = {a: met for a in self.agents}
        return (self._obs(), {a: reward for a in self.agents}, {**flags, ALL: met},
                {**{a: truncated for a in self.agents}, ALL: truncated}, {a: {} for a in self.agents})


PLAYERS = ("player_0", "player_1")
DISC_COLORS = {0: (236, 236, 236), 1: (214, 48, 49), -1: (250, 200, 40)}
BOARD_COLOR, CELL_PX = (40, 80, 170), 32


class ConnectFour(MultiAgentEnv):
    """Players take turns dropping a disc into a column; `connect` in a row (any direction) wins.

    Only the player to move observes: the board from its side (+1 own discs, -1 the opponent's,
    0 empty, row 0 on top), flattened. Who starts alternates at random per episode. A win gives
    +1/-1, a full board 0/0; a move into a full column loses (-1, the opponent +1). At the end both
    players observe the final board and are terminated.
    env_config: `rows` (default 6), `cols` (default 7), `connect` (default 4), `render_mode`.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 2}

    def __init__(self, config: dict | None = None):
        config = _check_keys("ConnectFour", config or {}, {"rows", "cols", "connect", "render_mode"})
        self.rows, self.cols = int(config.get("rows", 6)), int(config.get("cols", 7))
        self.connect = int(config.get("connect", 4))
        self.render_mode = config.get("render_mode")
        if not 2 <= self.connect <= max(self.rows, self.cols):
            raise ValueError(f"ConnectFour: need 2 <= connect <= max(rows, cols), got connect="
                             f"{self.connect} for a {self.rows} x {self.cols} board.")
        if self.render_mode not in (None, "rgb_array"):
            raise ValueError(f"ConnectFour: render_mode must be None or 'rgb_array', got "
                             f"{self.render_mode!r}.")
        self.possible_agents = list(PLAYERS)
        self.agents = list(PLAYERS)
        space = gym.spaces.Box(-1.0, 1.0, (self.rows * self.cols,), np.float32)
        self.observation_spaces = {p: space for p in PLAYERS}
        self.action_spaces = {p: gym.spaces.Discrete(self.cols) for p in PLAYERS}
        self.board = np.zeros((self.rows, self.cols), dtype=np.int8)  # +1 player_0, -1 player_1
        self.to_move = 0
        super().__init__()

    def observe(self, player: int) -> np.ndarray:
        """The board as `player` (0 or 1) sees it: its own discs +1."""
        sign = 1 if player == 0 else -1
        return (self.board * sign).astype(np.float32).ravel()

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self.board[:] = 0
        self.to_move = int(self.np_random.integers(2))
        self.agents = list(PLAYERS)
        return {PLAYERS[self.to_move]: self.observe(self.to_move)}, {}

    def step(self, action_dict: dict) -> tuple[dict, dict, dict, dict, dict]:
        mover = PLAYERS[self.to_move]
        if action_dict.keys() != {mover}:
            check_action_dict("ConnectFour", action_dict, [mover])
        col, sign = int(action_dict[mover]), 1 if self.to_move == 0 else -1
        free = np.flatnonzero(self.board[:, col] == 0) if 0 <= col < self.cols else []
        if len(free) == 0:  # an illegal move (full column) loses
            return self._end({mover: -1.0, PLAYERS[1 - self.to_move]: 1.0})
        row = free[-1]
        self.board[row, col] = sign
        if wins(self.board, row, col, self.connect):
            return self._end({mover: 1.0, PLAYERS[1 - self.to_move]: -1.0})
        if not (self.board == 0).any():
            return self._end({p: 0.0 for p in PLAYERS})
        self.to_move = 1 - self.to_move
        nxt = PLAYERS[self.to_move]
        return ({nxt: self.observe(self.to_move)}, {}, {ALL: False}, {ALL: False}, {})

    def _end(self, rewards: dict) -> tuple[dict, dict, dict, dict, dict]:
        self.agents = []
        obs = {p: self.observe(i) for i, p in enumerate(PLAYERS)}
        return (obs, rewards, {**{p: True for p in PLAYERS}, ALL: True},
                {**{p: False for p in PLAYERS}, ALL: False}, {})

    def render(self) -> np.ndarray | None:
        """The board as an RGB image (H, W, 3): red discs player_0, yellow player_1."""
        if self.render_mode != "rgb_array":
            return None
        image = np.full((self.rows * CELL_PX, self.cols * CELL_PX, 3), BOARD_COLOR, np.uint8)
        yy, xx = np.mgrid[:CELL_PX, :CELL_PX]
        disc = (yy - CELL_PX / 2) ** 2 + (xx - CELL_PX / 2) ** 2 <= (CELL_PX * 0.4) ** 2
        for (r, c), value in np.ndenumerate(self.board):
            image[r * CELL_PX:(r + 1) * CELL_PX, c * CELL_PX:(c + 1) * CELL_PX][disc] = \
                DISC_COLORS[int(value)]
        return image


def wins(board: np.ndarray, row: int, col: int, connect: int) -> bool:
    """Whether the disc at (row, col) completes `connect` in a row of its colour."""
    sign, rows, cols = board[row, col], *board.shape
    for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
        count = 1
        for direction in (1, -1):
            r, c = row + direction * dr, col + direction * dc
            while 0 <= r < rows and 0 <= c < cols and board[r, c] == sign:
                count += 1
                r, c = r + direction * dr, c + direction * dc
        if count >= connect:
            return True
    return False


def heuristic_action(obs: np.ndarray, rows: int, cols: int, connect: int,
                     rng: np.random.Generator) -> int:
    """A fixed opponent for win-rate evaluation: complete a line if it can, else block the
    opponent's, else a random legal column, columns near the centre more likely."""
    board = np.asarray(obs).reshape(rows, cols)
    legal = [c for c in range(cols) if board[0, c] == 0]
    for sign in (1, -1):  # own win first, then the opponent's threat
        for c in legal:
            row = np.flatnonzero(board[:, c] == 0)[-1]
            trial = board.copy()
            trial[row, c] = sign
            if wins(trial, row, c, connect):
                return c
    weights = np.array([cols - abs(2 * c - (cols - 1)) for c in legal], dtype=float)
    return int(rng.choice(legal, p=weights / weights.sum()))


def _creator(cls: type) -> Any:
    def create(env_config: dict) -> MultiAgentEnv:
        return cls(env_config)
    return create


register_env("MeetingGrid", _creator(MeetingGrid))
register_env("ConnectFour", _creator(ConnectFour))
register_env("MultiAgentCartPole", _creator(MultiAgentCartPole))
