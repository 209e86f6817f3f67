"""Tabular Q-learning on the course's GridWorld (lesson 09): the Bellman equation with a table for Q.

The Bellman optimality equation says what the best Q-values satisfy,

    Q*(s, a) = E[r + gamma * (1 - terminated) * max_a' Q*(s', a')],

and Q-learning (Watkins and Dayan, 1992) moves each visited entry of a table a step `lr` toward a
sample of the right-hand side, acting epsilon-greedily so that every action keeps being tried.
`optimal_q` solves the same equation exactly from the grid's known moves (value iteration), so a
learned table can be checked against the answer. Course-only code: DQN (rlcourse/algorithms/dqn/)
replaces the table by a network.
"""

import numpy as np

from rlcourse.course.envs import GridWorld


def linear_epsilon(step: int, start: float, end: float, decay_steps: int) -> float:
    """The exploration rate at `step`: from `start` down to `end` in a straight line over
    `decay_steps` steps, then `end` (the shape of DQNConfig's default `epsilon` schedule)."""
    return end + (start - end) * max(0.0, 1.0 - step / decay_steps)


def epsilon_greedy(q_row: np.ndarray, epsilon: float, rng: np.random.Generator) -> int:
    """With probability `epsilon` a uniformly random action, else the greedy one (ties at random)."""
    if rng.random() < epsilon:
        return int(rng.integers(len(q_row)))
    return int(rng.choice(np.flatnonzero(q_row == q_row.max())))


def q_learning(env: GridWorld, num_steps: int, gamma: float = 0.99, lr: float = 0.5,
               epsilon: tuple[float, float, int] = (1.0, 0.05, 5000), seed: int = 0
               ) -> tuple[np.ndarray, list[float]]:
    """Learn a table Q[s, a] in `num_steps` env steps; return it and the returns of finished episodes.

    After each step: target = r + gamma * (1 - terminated) * max_a' Q[s', a'], then
    Q[s, a] += lr * (target - Q[s, a]). A truncated episode still bootstraps (time ran out, the
    state had a future). `epsilon` is (start, end, decay_steps) for `linear_epsilon`.
    """
    rng = np.random.default_rng(seed)
    q = np.zeros((env.observation_space.n, env.action_space.n))
    obs, _ = env.reset(seed=seed)
    returns, episode_return = [], 0.0
    for step in range(num_steps):
        action = epsilon_greedy(q[obs], linear_epsilon(step, *epsilon), rng)
        next_obs, reward, terminated, truncated, _ = env.step(action)
        target = reward + gamma * (1.0 - terminated) * q[next_obs].max()
        q[obs, action] += lr * (target - q[obs, action])
        episode_return += reward
        obs = next_obs
        if terminated or truncated:
            returns.append(episode_return)
            obs, episode_return = env.reset()[0], 0.0
    return q, returns


def gridworld_model(env: GridWorld) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The grid's moves as tables over (cell, action): next cell, reward and terminated.

    Found by putting the agent on each cell and stepping, so it only holds without slips.
    """
    if env.slip:
        raise ValueError(f"gridworld_model: slip={env.slip} makes moves random; use a GridWorld "
                         "with slip=0 (its default).")
    shape = (env.observation_space.n, env.action_space.n)
    next_cell, reward, terminated = np.zeros(shape, int), np.zeros(shape), np.zeros(shape, bool)
    for cell in range(shape[0]):
        for action in range(shape[1]):
            env.position, env.steps = divmod(cell, env.size), 0
            next_cell[cell, action], reward[cell, action], terminated[cell, action], _, _ = \
                env.step(action)
    return next_cell, reward, terminated


def optimal_q(env: GridWorld, gamma: float = 0.99, sweeps: int = 200) -> np.ndarray:
    """Q* by value iteration: apply the Bellman optimality equation to every entry, `sweeps` times."""
    next_cell, reward, terminated = gridworld_model(env)
    q = np.zeros(next_cell.shape)
    for _ in range(sweeps):
        q = reward + gamma * (1.0 - terminated) * q.max(axis=1)[next_cell]
    return q


def greedy_is_optimal(q: np.ndarray, q_star: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """Per cell of `cells`: does the greedy action of `q` have the best value under `q_star`?"""
    best = q_star[cells].max(axis=1)
    return q_star[cells, q[cells].argmax(axis=1)] >= best - 1e-9
