"""get_module, compute_actions and forward_inference on every algorithm: PPO, IMPALA, DQN, SAC, Ape-X
and multi-agent PPO. Each is built small (no training) and asked for its module by default and by
its module id; the module's greedy actions and `compute_actions` (greedy, by id, exploring) must lie
in the action space; a wrong module id must name the algorithm's modules, observations not of shape
(B, *space.shape) or not finite are refused naming the argument, and RLlib's old method names say
what to call instead."""

import re

import gymnasium as gym
import numpy as np
import pytest
import torch

import rlcourse.course.multi_agent_envs  # noqa: F401  (registers MultiAgentCartPole)
from rlcourse.algorithms.apex_dqn import ApexDQNConfig
from rlcourse.algorithms.dqn import DQNConfig
from rlcourse.algorithms.impala.impala import IMPALAConfig
from rlcourse.algorithms.ppo.ppo import PPOConfig
from rlcourse.algorithms.sac import SACConfig
from rlcourse.core import DEFAULT_MODULE_ID
from rlcourse.core.rl_module.numpy_mlp import to_env_actions

pytestmark = pytest.mark.timeout(120)

TINY = {"fcnet_hiddens": [8]}


def separate(agent_id, episode, **kwargs):
    return f"p{agent_id}"


CONFIGS = {
    "PPO": lambda: PPOConfig().environment("CartPole-v1")
    .training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1),
    "IMPALA": lambda: IMPALAConfig().environment("CartPole-v1"),
    "DQN": lambda: DQNConfig().environment("CartPole-v1"),
    "SAC": lambda: SACConfig().environment("Pendulum-v1"),
    "ApexDQN": lambda: ApexDQNConfig().environment("CartPole-v1")
    .env_runners(num_env_runners=1, num_cpus_per_env_runner=0.5)
    .training(replay_buffer_config={"num_replay_buffer_shards": 1, "capacity": 64},
              num_cpus_per_replay_shard=0),
    "multi-agent PPO": lambda: PPOConfig()
    .environment("MultiAgentCartPole", env_config={"num_agents": 2})
    .training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1)
    .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=separate),
}


@pytest.fixture(scope="module", params=list(CONFIGS))
def algo(request):
    """Each algorithm, built once for this file's tests and stopped after them."""
    config = CONFIGS[request.param]().rl_module(model_config=TINY).debugging(seed=0)
    if request.param != "ApexDQN":  # Ape-X samples on runner actors only
        config.env_runners(num_env_runners=0)
    else:
        request.getfixturevalue("ray_session")
    algo = config.build_algo()
    yield algo
    algo.stop()


def spaces_by_module(algo) -> dict[str, tuple[gym.Space, gym.Space]]:
    """{module id: (observation space, action space)} as the algorithm's modules see them."""
    if algo.module_spec is not None:
        return algo.module_spec.spaces()
    return {DEFAULT_MODULE_ID: (algo.observation_space, algo.action_space)}


def observations(space: gym.Space, n: int = 6) -> np.ndarray:
    space.seed(0)
    return np.stack([space.sample() for _ in range(n)])


def assert_inside(actions: np.ndarray, space: gym.Space, n: int = 6) -> None:
    assert len(actions) == n
    for action in actions:
        assert space.contains(np.asarray(action, dtype=space.dtype).reshape(space.shape)), (
            f"{action!r} is outside {space}")


def test_get_module_without_and_with_module_id(algo):
    if algo.module_spec is None:
        module, by_id = algo.get_module(), algo.get_module(DEFAULT_MODULE_ID)
        assert type(module) is type(by_id)
        for (name, a), b in zip(module.state_dict().items(), by_id.state_dict().values(),
                                strict=True):
            assert torch.equal(a, b), name
    else:
        modules = algo.get_module()
        assert sorted(modules.keys()) == ["p0", "p1"]
        for module_id in ("p0", "p1"):
            assert type(algo.get_module(module_id)) is type(modules[module_id])


def test_forward_inference_gives_actions_inside_the_action_space(algo):
    for module_id, (obs_space, action_space) in spaces_by_module(algo).items():
        module = algo.get_module(module_id)
        obs = observations(obs_space)
        with torch.no_grad():
            inputs = module.forward_inference({"obs": torch.as_tensor(obs)})["action_dist_inputs"]
            greedy = to_env_actions(module.greedy_actions(inputs).numpy(), action_space)
        assert_inside(greedy, action_space)
        # compute_actions acts greedily through the same module (no connectors are configured).
        np.testing.assert_allclose(algo.compute_actions(obs, module_id=module_id), greedy,
                                   rtol=1e-5, atol=1e-6)


def test_compute_actions_default_by_id_and_exploring(algo):
    for module_id, (obs_space, action_space) in spaces_by_module(algo).items():
        obs = observations(obs_space)
        greedy = algo.compute_actions(obs, module_id=module_id)
        assert_inside(greedy, action_space)
        assert_inside(algo.compute_actions(obs, explore=True, module_id=module_id), action_space)
        # One observation 500 times: an untrained policy that explores does not always act greedily.
        explored = algo.compute_actions(np.repeat(obs[:1], 500, axis=0), explore=True,
                                        module_id=module_id)
        assert not np.allclose(explored, greedy[:1]), "explore=True gave the greedy action 500 times"
        if algo.module_spec is None:
            np.testing.assert_array_equal(algo.compute_actions(obs), greedy)
            assert_inside(algo.compute_actions(obs, explore=True), action_space)
            assert_inside(algo.compute_actions(obs, True, DEFAULT_MODULE_ID), action_space)


def test_a_wrong_module_id_names_the_modules(algo):
    names = "'p0', 'p1'" if algo.module_spec is not None else f"'{DEFAULT_MODULE_ID}'"
    obs_space = next(iter(spaces_by_module(algo).values()))[0]
    with pytest.raises(KeyError, match=f"no module 'main'.*modules are \\[{names}\\]"):
        algo.get_module("main")
    with pytest.raises(KeyError, match=f"no module 'main'.*modules are \\[{names}\\]"):
        algo.compute_actions(observations(obs_space), module_id="main")
    if algo.module_spec is not None:
        with pytest.raises(KeyError, match="no module 'default_policy'"):
            algo.get_module(DEFAULT_MODULE_ID)
        with pytest.raises(ValueError, match="name the policy with module_id=.*'p0', 'p1'"):
            algo.compute_actions(observations(obs_space))


def test_observations_not_a_finite_batch_are_refused_naming_the_argument_and_the_fix(algo):
    for module_id, (obs_space, _) in spaces_by_module(algo).items():
        obs, n = observations(obs_space), obs_space.shape[0]
        for bad, got in ((obs[0], f"({n},)"), (np.zeros((1, n + 1), np.float32), f"(1, {n + 1})")):
            with pytest.raises(ValueError, match=re.escape(
                    f"compute_actions(observations=...) has shape {got}; expected (B, {n}) for a "
                    "batch of B: for one observation pass obs[None].")):
                algo.compute_actions(bad, module_id=module_id)
        obs[2, -1] = np.nan
        with pytest.raises(ValueError, match=r"observations=\.\.\.\) row 2 holds NaN or infinity"):
            algo.compute_actions(obs, explore=True, module_id=module_id)


def test_rllibs_old_method_names_say_what_to_call(algo):
    for name, replacement in [("save", "save_to_path(path)"), ("get_policy", "get_module()"),
                              ("restore", "restore_from_path(path), or Algorithm.from_checkpoint"),
                              ("compute_single_action", "compute_actions(obs[None])[0]")]:
        with pytest.raises(AttributeError, match=f"algo.{name}.*old method.*use algo."
                                                 f"{re.escape(replacement)}"):
            getattr(algo, name)
        assert not hasattr(algo, name)
    with pytest.raises(AttributeError, match="object has no attribute 'no_such_method'"):
        algo.no_such_method()
