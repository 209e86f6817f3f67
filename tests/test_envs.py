"""GridWorld: gymnasium's checker, its rules (moves, pits, goal, time limit), env_config, rendering,
(That PPO learns it on runner actors, which import it from rlcourse.course.envs, is
tests/test_learning.py's gridworld_ppo.yaml row.)"""

import warnings

import pytest
from gymnasium.utils.env_checker import check_env

from rlcourse.course.envs import CELL_PX, COLORS, DOWN, LEFT, RIGHT, UP, GridWorld
from rlcourse.env.env_context import EnvContext


def place(env: GridWorld, row: int, col: int) -> None:
    """Put the agent on a cell after reset (the start cell is random)."""
    env.reset(seed=0)
    env.position = (row, col)


def test_gymnasium_env_checker_passes_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(GridWorld({"size": 6, "slip": 0.2}), skip_render_check=True)
        env = GridWorld({"render_mode": "rgb_array"})
        env.reset(seed=0)
        assert env.render().shape == (5 * CELL_PX, 5 * CELL_PX, 3)


def test_moves_pits_goal_and_borders():
    env = GridWorld({"size": 5})  # pits in row 2 except column 2; goal (4, 4)
    place(env, 0, 0)
    obs, reward, terminated, truncated, _ = env.step(UP)  # into the border: stays
    assert (obs, reward, terminated, truncated) == (0, -0.01, False, False)
    obs, *_ = env.step(RIGHT)
    assert obs == 1
    place(env, 1, 1)
    _, reward, terminated, _, _ = env.step(DOWN)  # (2, 1) is a pit
    assert (reward, terminated) == (-1.0, True)
    place(env, 1, 2)
    obs, reward, terminated, _, _ = env.step(DOWN)  # (2, 2) is the gap
    assert (obs, reward, terminated) == (12, -0.01, False)
    place(env, 4, 3)
    obs, reward, terminated, truncated, _ = env.step(RIGHT)
    assert (obs, reward, terminated, truncated) == (24, 1.0, True, False)
    assert type(terminated) is bool and type(truncated) is bool


def test_time_limit_truncates_and_reset_starts_afresh():
    env = GridWorld({"size": 4, "max_episode_steps": 3})
    for _ in range(2):
        place(env, 0, 0)
        flags = [env.step(LEFT)[2:4] for _ in range(3)]
        assert flags == [(False, False), (False, False), (False, True)]


def test_episodes_start_on_random_safe_cells_reproducibly():
    env = GridWorld({"size": 5})
    starts = {int(env.reset(seed=seed)[0]) for seed in range(200)}
    pits_and_goal = {10, 11, 13, 14, 24}
    assert not starts & pits_and_goal
    assert len(starts) == 25 - len(pits_and_goal)
    assert env.reset(seed=7)[0] == GridWorld({"size": 5}).reset(seed=7)[0]


def test_env_config_and_env_context_reach_the_env():
    env = GridWorld(EnvContext({"size": 7, "slip": 0.5, "max_episode_steps": 9}, worker_index=2,
                               vector_index=3))
    assert (env.size, env.slip, env.max_episode_steps) == (7, 0.5, 9)
    assert (env.worker_index, env.vector_index) == (2, 3)
    assert env.observation_space.n == 49 and env.pits.sum() == 6
    assert GridWorld().size == 5 and GridWorld().max_episode_steps == 20


def test_slip_sometimes_moves_elsewhere():
    env = GridWorld({"size": 5, "slip": 1.0})
    env.reset(seed=0)
    cells = set()
    for _ in range(40):
        env.position = (0, 2)
        cells.add(int(env.step(DOWN)[0]))
    assert cells == {1, 2, 3, 7}  # left, stay (up into the border), right, down


@pytest.mark.parametrize(("env_config", "match"), [
    ({"sise": 5}, "unknown env_config keys"),
    ({"size": 2}, "size >= 3"),
    ({"slip": 1.5}, "slip"),
    ({"render_mode": "human"}, "render_mode"),
])
def test_bad_env_config_fails_loudly(env_config, match):
    with pytest.raises(ValueError, match=match):
        GridWorld(env_config)


def test_render_draws_the_agent_on_its_cell():
    env = GridWorld({"size": 5, "render_mode": "rgb_array"})
    place(env, 3, 1)
    image = env.render()
    center = (3 * CELL_PX + CELL_PX // 2, 1 * CELL_PX + CELL_PX // 2)
    assert tuple(image[center]) == COLORS["agent"]
    assert tuple(image[2 * CELL_PX + 5, 5]) == COLORS["pit"]
    assert tuple(image[4 * CELL_PX + 5, 4 * CELL_PX + 5]) == COLORS["goal"]
    assert GridWorld({"size": 5}).render() is None
