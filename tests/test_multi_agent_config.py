"""config.multi_agent(policies=..., policy_mapping_fn=..., policies_to_train=...): its checks at
validate(), the spaces of each policy from the env's agents, and algorithms that train one module
refusing it."""

import gymnasium as gym
import numpy as np
import pytest
from helpers import small_ppo

import rlcourse.course.multi_agent_envs  # noqa: F401  (registers the course's envs)
from rlcourse.algorithms.algorithm_config import AlgorithmConfig
from rlcourse.core.rl_module.rl_module_spec import RLModuleSpec
from rlcourse.utils.validation import ConfigError

pytestmark = pytest.mark.timeout(60)


def self_play(agent_id, episode, **kwargs):
    return "main" if agent_id == "player_0" else "opponent"


def config(**settings):
    return small_ppo().environment("ConnectFour").multi_agent(**settings)


def test_settings_are_kept_and_travel_through_dicts():
    c = config(policies={"main", "opponent"}, policy_mapping_fn=self_play,
               policies_to_train=["main"])
    c.validate()
    assert c.is_multi_agent and not small_ppo().is_multi_agent
    copy = AlgorithmConfig.from_dict(c.to_dict())
    assert copy.policies == {"main", "opponent"} and copy.policy_mapping_fn is self_play
    assert copy.policies_to_train == ["main"]
    d = small_ppo().environment("ConnectFour").update_from_dict(
        {"policies": {"main"}, "policy_mapping_fn": lambda a, e: "main"})
    d.validate()
    assert d.policies == {"main"}


@pytest.mark.parametrize("settings, setting, words", [
    ({"policies": set()}, "policies", "non-empty set"),
    ({"policies": "main"}, "policies", "non-empty set"),
    ({"policies": {1, 2}, "policy_mapping_fn": self_play}, "policies", "strings"),
    ({"policies": {"main": "PPO"}, "policy_mapping_fn": self_play}, "policies", "RLModuleSpec"),
    ({"policies": {"main", "opponent"}}, "policy_mapping_fn", "which agent acts with which"),
    ({"policies": {"main"}, "policy_mapping_fn": lambda agent_id: "main"}, "policy_mapping_fn",
     "(agent_id, episode, **kwargs)"),
    ({"policies": {"main", "opponent"}, "policy_mapping_fn": self_play,
      "policies_to_train": ["mian"]}, "policies_to_train", "'mian' is not one of the policies"),
    ({"policies": {"main"}, "policy_mapping_fn": self_play, "policies_to_train": "main"},
     "policies_to_train", "module ids (a set)"),
    ({"policy_mapping_fn": self_play}, "policies", "set policies too"),
    ({"policies": {"main"}, "policy_mapping_fn": self_play, "policies_to_train": set()},
     "policies_to_train", "it is empty, so no policy would train"),
    ({"policies": {"main"}, "policy_mapping_fn": self_play,
      "policies_to_train": lambda module_id, batch: None}, "policies_to_train",
     "returned None for module 'main': return True to train"),
    ({"policies": {"main": RLModuleSpec(observation_space=(2,))}, "policy_mapping_fn": self_play},
     "policies", "RLModuleSpec(observation_space=(2,)): give a gymnasium space"),
])
def test_bad_settings_fail_at_validate_naming_setting_and_fix(settings, setting, words):
    with pytest.raises(ConfigError, match=r"config\.multi_agent\(" + setting) as error:
        config(**settings).validate()
    assert words in str(error.value)


def test_a_policies_to_train_function_that_answers_no_bool_in_training_is_named():
    """validate() asks the function once with no episodes; one that answers only with episodes
    (here None: a forgotten `return`) fails at the first update, naming the setting."""
    c = config(policies={"main", "opponent"}, policy_mapping_fn=self_play,
               policies_to_train=lambda module_id, batch: True if not batch else None)
    with c.build_algo() as algo, pytest.raises(
            ConfigError, match=r"multi_agent\(policies_to_train=.*the function returned None for "
                               r"module 'main': return True to train"):
        algo.train()


def test_the_default_policy_needs_no_mapping_fn():
    c = small_ppo().environment("MeetingGrid").multi_agent(policies={"default_policy"})
    c.validate()
    spec = c.get_multi_rl_module_spec()
    assert spec.module_ids == ["default_policy"]
    assert spec.spaces()["default_policy"][1] == gym.spaces.Discrete(5)


def test_get_multi_rl_module_spec_takes_each_policys_spaces_from_its_agents():
    c = config(policies={"main", "opponent"}, policy_mapping_fn=self_play)
    spaces = c.get_multi_rl_module_spec().spaces()
    assert set(spaces) == {"main", "opponent"}
    assert spaces["main"][0].shape == (42,) and spaces["opponent"][1] == gym.spaces.Discrete(7)


def test_get_multi_rl_module_spec_refuses_unknown_ids_wrong_spaces_and_single_agent_envs():
    c = config(policies={"main"}, policy_mapping_fn=self_play)
    with pytest.raises(ValueError, match="agent 'player_1' to policy 'opponent'.*policies 'main'"):
        c.get_multi_rl_module_spec()
    small = RLModuleSpec(observation_space=gym.spaces.Box(-1, 1, (20,), np.float32),
                         action_space=gym.spaces.Discrete(5))
    c = config(policies={"main": small, "opponent": None}, policy_mapping_fn=self_play)
    with pytest.raises(ValueError, match="Agent 'player_0'.*policy 'main'.*multi_agent"):
        c.get_multi_rl_module_spec()
    c = small_ppo().environment("CartPole-v1").multi_agent(policies={"default_policy"})
    with pytest.raises(TypeError, match="not a MultiAgentEnv"):
        c.get_multi_rl_module_spec()


def test_discrete_observations_in_multi_agent_ask_for_box_ones_or_a_module_class():
    from rlcourse.env.multi_agent_env import make_multi_agent

    c = small_ppo().environment(make_multi_agent("FrozenLake-v1")).multi_agent(
        policies={"default_policy"})
    with pytest.raises(ValueError, match="observes Discrete.*Box observations.*rl_module_class"):
        c.get_multi_rl_module_spec()


def test_an_algorithm_without_multi_agent_training_refuses_a_multi_agent_config():
    from rlcourse.algorithms.dqn.dqn import DQNConfig

    c = DQNConfig().environment("ConnectFour").multi_agent(policies={"main", "opponent"},
                                                          policy_mapping_fn=self_play)
    with pytest.raises(ConfigError, match="DQN trains one module.*PPOConfig"):
        c.build_algo()
