"""Lesson 03's reward engineering: potential-based shaping adds gamma * Phi(s') - Phi(s) (Phi = 0
once terminated), TaskReturn reports the env's own return, and LogTaskReturn logs it."""

import numpy as np
import pytest
from gymnasium.wrappers import TransformReward
from helpers import small_ppo

from rlcourse.connectors.env_to_module import FlattenObservations
from rlcourse.course.envs import DOWN, RIGHT, GridWorld
from rlcourse.course.reward_shaping import (
    LogTaskReturn,
    PotentialShaping,
    TaskReturn,
    grid_potential,
)


def test_shaping_adds_gamma_phi_next_minus_phi_and_phi_is_zero_once_terminated():
    phi = grid_potential(5)
    assert phi(24) == 0.0 and phi(0) == -1.0 and phi(23) == -0.125
    env = PotentialShaping(TaskReturn(GridWorld({"size": 5})), phi, gamma=0.9)
    env.reset(seed=0)
    env.unwrapped.position = (3, 3)  # cell 18, Phi = -0.25
    env.last_potential = phi(18)
    obs, reward, terminated, _, _ = env.step(DOWN)  # to cell 23: -0.01 + 0.9 * -0.125 + 0.25
    assert obs == 23 and not terminated
    assert reward == pytest.approx(-0.01 + 0.9 * phi(23) - phi(18))
    obs, reward, terminated, _, info = env.step(RIGHT)  # the goal: Phi(terminal) = 0
    assert obs == 24 and terminated
    assert reward == pytest.approx(1.0 + 0.0 - phi(23))
    assert info["task_return"] == pytest.approx(-0.01 + 1.0)  # the env's own rewards


def test_task_return_is_the_envs_whatever_wraps_it():
    env = TransformReward(TaskReturn(GridWorld({"size": 5})), lambda r: 1000 * r)
    env.reset(seed=0)
    total, info, done = 0.0, {}, False
    while not done:
        _, reward, terminated, truncated, info = env.step(env.action_space.sample())
        total += reward
        done = terminated or truncated
    assert info["task_return"] == pytest.approx(total / 1000)


def test_log_task_return_reports_the_envs_return_in_results():
    config = (small_ppo().environment(lambda ctx: TransformReward(TaskReturn(GridWorld(ctx)),
                                                                  lambda r: 10 * r))
              .env_runners(env_to_module_connector=FlattenObservations)
              .training(train_batch_size_per_learner=400, minibatch_size=200, num_epochs=1)
              .callbacks(LogTaskReturn))
    with config.build_algo() as algo:
        runners = algo.train()["env_runners"]
    assert np.isclose(runners["task_return"], runners["episode_return_mean"] / 10, atol=1e-4)
