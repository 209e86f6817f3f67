"""MultiAgentEnv, make_multi_agent, check_multi_agent_env and the course's multi-agent envs."""

import gymnasium as gym
import numpy as np
import pytest

from rlcourse.course.multi_agent_envs import (
    ConnectFour,
    MeetingGrid,
    MultiAgentCartPole,
    heuristic_action,
    wins,
)
from rlcourse.env.env_context import EnvContext
from rlcourse.env.multi_agent_env import MultiAgentEnv, make_multi_agent
from rlcourse.env.multi_agent_env_checker import check_multi_agent_env
from rlcourse.env.registry import get_env_creator

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("make", [lambda: MeetingGrid(), lambda: ConnectFour({"rows": 4, "cols": 5,
                                                                             "connect": 3}),
                                  lambda: MultiAgentCartPole({"num_agents": 3})],
                         ids=["MeetingGrid", "ConnectFour", "MultiAgentCartPole"])
def test_course_envs_pass_the_checker(make):
    env = make()
    check_multi_agent_env(env, num_steps=300)
    assert set(env.possible_agents) == set(env.observation_spaces) == set(env.action_spaces)


@pytest.mark.parametrize("env_class", [MeetingGrid, ConnectFour, MultiAgentCartPole],
                         ids=lambda c: c.__name__)
def test_course_envs_are_registered_by_name(env_class):
    env, direct = get_env_creator(env_class.__name__)(EnvContext({})), env_class({})
    assert isinstance(env, MultiAgentEnv) and type(env) is env_class  # the env of that name
    assert env.possible_agents == direct.possible_agents
    assert env.observation_spaces == direct.observation_spaces
    assert env.action_spaces == direct.action_spaces


def test_make_multi_agent_steps_independent_copies_and_ends_when_all_are_done():
    env = make_multi_agent("CartPole-v1")(EnvContext({"num_agents": 2}, worker_index=1))
    assert env.possible_agents == [0, 1] and env.get_action_space(1) == gym.spaces.Discrete(2)
    obs, _ = env.reset(seed=3)
    assert not np.array_equal(obs[0], obs[1])  # seeded seed + i: not the same episode twice
    done_at, t = {}, 0
    while True:
        t += 1
        # agent 0 pushes right only (falls fast), agent 1 alternates (lasts longer)
        actions = {a: (1 if a == 0 else t % 2) for a in env.agents}
        obs, rewards, terms, truncs, _ = env.step(actions)
        done_at.update({a: t for a in actions if terms[a] or truncs[a]})
        if terms["__all__"] or truncs["__all__"]:
            break
        assert not (terms["__all__"] or truncs["__all__"])
    assert done_at[0] < done_at[1]  # agent 0 finished early; the episode went on for agent 1
    assert env.agents == [] and terms["__all__"] and not truncs["__all__"]


def test_make_multi_agent_refuses_an_action_dict_missing_an_acting_agent():
    env = MultiAgentCartPole({"num_agents": 3})
    env.reset(seed=0)
    with pytest.raises(ValueError, match="no action for agent 2.*must act"):
        env.step({0: 0, 1: 0})
    with pytest.raises(ValueError, match="action for agent 7.*not to act"):
        env.step({0: 0, 1: 0, 2: 0, 7: 1})


def test_connect_four_takes_turns_and_both_players_see_the_end():
    env = ConnectFour({"rows": 4, "cols": 4, "connect": 3, "render_mode": "rgb_array"})
    obs, _ = env.reset(seed=0)
    first = next(iter(obs))
    second = "player_1" if first == "player_0" else "player_0"
    for mover, col in [(first, 0), (second, 1), (first, 0), (second, 1)]:
        obs, rewards, terms, _, _ = env.step({mover: col})
        assert not terms["__all__"] and list(obs) != [mover]
    with pytest.raises(ValueError, match=f"no action for agent '{first}'"):
        env.step({second: 2})
    obs, rewards, terms, truncs, _ = env.step({first: 0})  # three in column 0
    assert rewards == {first: 1.0, second: -1.0} and terms["__all__"] and not truncs["__all__"]
    assert set(obs) == {first, second}
    np.testing.assert_array_equal(obs[first], -obs[second])  # each sees the board from its side
    image = env.render()
    assert image.shape == (4 * 32, 4 * 32, 3) and image.dtype == np.uint8
    assert len(np.unique(image.reshape(-1, 3), axis=0)) == 4  # board, empty, red and yellow


def test_connect_four_illegal_move_loses():
    env = ConnectFour({"rows": 2, "cols": 3, "connect": 2})
    obs, _ = env.reset(seed=1)
    mover = next(iter(obs))
    other = "player_1" if mover == "player_0" else "player_0"
    env.step({mover: 0})
    env.step({other: 0})
    _, rewards, terms, _, _ = env.step({mover: 0})  # column 0 is full
    assert rewards == {mover: -1.0, other: 1.0} and terms["__all__"]


def test_wins_sees_every_direction():
    board = np.zeros((4, 4), dtype=np.int8)
    board[[3, 2, 1], [0, 1, 2]] = 1  # a rising diagonal
    assert wins(board, 2, 1, 3) and not wins(board, 2, 1, 4)
    board[3, 3] = -1
    assert not wins(board, 3, 3, 2)


def test_heuristic_wins_if_it_can_else_blocks():
    rng = np.random.default_rng(0)
    board = np.zeros((4, 5), dtype=np.float32)
    board[3, [0, 1]] = 1  # own two in the bottom row: column 2 wins (connect 3)
    board[3, [3, 4]] = -1  # the opponent threatens too; winning comes first
    assert heuristic_action(board.ravel(), 4, 5, 3, rng) == 2
    board = np.zeros((4, 5), dtype=np.float32)
    board[[3, 2], 4] = -1  # the opponent has two in column 4: block it
    assert heuristic_action(board.ravel(), 4, 5, 3, rng) == 4


def test_meeting_grid_rewards_both_agents_for_meeting():
    env = MeetingGrid({"size": 2})
    env.reset(seed=0)
    env.positions = np.array([[0, 0], [0, 1]])
    obs, rewards, terms, truncs, _ = env.step({"agent_0": 2, "agent_1": 0})  # right; stay
    assert rewards == {"agent_0": 1.0, "agent_1": 1.0} and terms["__all__"]
    np.testing.assert_array_equal(obs["agent_0"], [0, 1, 0, 1])
    with pytest.raises(ValueError, match="unknown env_config keys"):
        MeetingGrid({"sise": 3})


class RewardsAStranger(MultiAgentEnv):
    def __init__(self, config=None):
        self.possible_agents = self.agents = ["a", "b"]
        self.observation_spaces = {a: gym.spaces.Discrete(3) for a in self.agents}
        self.action_spaces = {a: gym.spaces.Discrete(2) for a in self.agents}
        super().__init__()

    def reset(self, *, seed=None, options=None):
        return {"a": 0}, {}

    def step(self, action_dict):
        return {"a": 1}, {"a": 0.0, "b": 1.0}, {"__all__": False}, {"__all__": False}, {}


class BadObservation(RewardsAStranger):
    def reset(self, *, seed=None, options=None):
        return {"b": 5}, {}


def test_checker_names_the_agent_of_a_broken_env():
    with pytest.raises(ValueError, match="RewardsAStranger rewarded agent 'b'.*never observed"):
        check_multi_agent_env(RewardsAStranger())
    with pytest.raises(ValueError, match="agent 'b' that is not in its observation space"):
        check_multi_agent_env(BadObservation())


def test_the_heuristic_opponent_beats_random_play():
    """A fixed opponent worth measuring a self-play policy against: it wins most games vs random."""
    env = ConnectFour({"rows": 4, "cols": 5, "connect": 3})
    rng = np.random.default_rng(0)
    wins_by_heuristic = 0
    for game in range(60):
        obs, _ = env.reset(seed=game)
        heuristic = "player_0" if game % 2 else "player_1"
        while True:
            (mover, board), = obs.items()
            legal = np.flatnonzero(board.reshape(4, 5)[0] == 0)
            action = (heuristic_action(board, 4, 5, 3, rng) if mover == heuristic
                      else int(rng.choice(legal)))
            obs, rewards, terms, _, _ = env.step({mover: action})
            if terms["__all__"]:
                wins_by_heuristic += rewards[heuristic] > 0
                break
    assert wins_by_heuristic >= 45
