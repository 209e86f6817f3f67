"""Tabular Q-learning (rlcourse/course/tabular.py, lesson 09) finds the GridWorld's best moves."""

import numpy as np
import pytest

from rlcourse.course.envs import GridWorld
from rlcourse.course.tabular import (
    epsilon_greedy,
    greedy_is_optimal,
    gridworld_model,
    linear_epsilon,
    optimal_q,
    q_learning,
)


def start_cells(env: GridWorld) -> np.ndarray:
    return np.array([row * env.size + col for row, col in env.start_cells])


def test_value_iteration_solves_the_bellman_equation():
    env = GridWorld()
    next_cell, reward, terminated = gridworld_model(env)
    q_star = optimal_q(env, gamma=0.99)
    assert np.allclose(q_star, reward + 0.99 * (1 - terminated) * q_star.max(axis=1)[next_cell])
    # From the start corner the shortest way is 8 steps through the gap: 7 steps of -0.01, then +1.
    assert q_star[0].max() == pytest.approx(-0.01 * sum(0.99**k for k in range(7)) + 0.99**7)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_q_learning_learns_the_optimal_policy_within_its_budget(seed):
    q, returns = q_learning(GridWorld(), num_steps=10_000, seed=seed)
    cells = start_cells(GridWorld())
    q_star = optimal_q(GridWorld())
    assert greedy_is_optimal(q, q_star, cells).all()
    assert np.abs(q[cells].max(axis=1) - q_star[cells].max(axis=1)).max() < 0.05
    assert np.mean(returns[-50:]) > 0.5  # mostly reaching the goal while still exploring a little


def test_a_table_that_never_learned_is_not_optimal():
    cells = start_cells(GridWorld())
    untrained = np.zeros((25, 4))
    untrained[:, 0] = 1.0  # always up
    assert not greedy_is_optimal(untrained, optimal_q(GridWorld()), cells).all()
    q_short, _ = q_learning(GridWorld(), num_steps=50, seed=0)
    assert not greedy_is_optimal(q_short, optimal_q(GridWorld()), cells).all()


def test_epsilon_greedy_and_its_schedule():
    rng = np.random.default_rng(0)
    q_row = np.array([0.0, 1.0, 0.5, 0.2])
    picks = np.bincount([epsilon_greedy(q_row, 0.2, rng) for _ in range(4000)], minlength=4) / 4000
    assert picks == pytest.approx([0.05, 0.85, 0.05, 0.05], abs=0.025)
    assert linear_epsilon(0, 1.0, 0.05, 100) == 1.0
    assert linear_epsilon(50, 1.0, 0.05, 100) == pytest.approx(0.525)
    assert linear_epsilon(500, 1.0, 0.05, 100) == 0.05


def test_the_model_needs_a_deterministic_grid():
    with pytest.raises(ValueError, match="slip=0"):
        gridworld_model(GridWorld({"slip": 0.1}))
