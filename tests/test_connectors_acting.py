"""Acting from a checkpoint trained with env-to-module connectors: RLModule.from_checkpoint, the
torch.export file, `rlcourse evaluate` and the Serve deployment take raw env observations and
process them with the checkpoint's connectors and its saved statistics, frozen; what they cannot
process they refuse, naming the setting."""

import gymnasium as gym
import numpy as np
import pytest
import torch
from helpers import small_ppo
from test_connectors import DictEnv, mean_std_filter

import rlcourse.course.evaluate as evaluate
from rlcourse.connectors.env_to_module import FlattenObservations
from rlcourse.connectors.env_to_module.mean_std_filter import RunningStat
from rlcourse.core.rl_module.module_loading import TracedConnector, export_policy, greedy_env_actions
from rlcourse.core.rl_module.rl_module import RLModule
from rlcourse.serve.app import PolicyDeployment
from rlcourse.utils.validation import ConfigError

pytestmark = pytest.mark.timeout(180)
# CartPole observations far from the filter's mean: unnormalized, they would give other actions.
RAW = np.random.default_rng(0).uniform(-2.0, 2.0, (256, 4)).astype(np.float32)


def flatten_and_filter(env, spaces=None, device=None):
    """A module-level factory (checkpoints name it): Dict observations flattened, then normalized."""
    from rlcourse.connectors.env_to_module import MeanStdFilter

    return [FlattenObservations(), MeanStdFilter()]


def small_config(env, factory):
    return (small_ppo().environment(env).env_runners(env_to_module_connector=factory)
            .training(train_batch_size_per_learner=200, minibatch_size=100, num_epochs=1)
            .debugging(seed=0))


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(algorithm, checkpoint, merged statistics): a local CartPole PPO with MeanStdFilter, trained
    two iterations and saved; stopped at the end."""
    algo = small_config("CartPole-v1", mean_std_filter).build_algo()
    algo.train()
    algo.train()
    path = algo.save_to_path(tmp_path_factory.mktemp("ckpt"))
    stats = RunningStat.from_plain(algo.env_runner_group.env_to_module_state[0]["running_stats"])
    yield algo, path, stats
    algo.stop()


def test_from_checkpoint_normalizes_with_the_saved_statistics_frozen(trained):
    algo, path, stats = trained
    module = RLModule.from_checkpoint(path, allowed=[mean_std_filter])
    assert stats.n >= 400
    expected = np.clip((RAW - stats.mean) / (stats.std + 1e-8), -10, 10)
    np.testing.assert_allclose(module.env_to_module(RAW), expected, rtol=1e-5, atol=1e-5)
    actions = greedy_env_actions(module, RAW)
    np.testing.assert_array_equal(actions, algo.compute_actions(RAW))
    np.testing.assert_array_equal(greedy_env_actions(module, RAW), actions)  # nothing updated
    assert module.env_to_module.connectors[0].running_stats.n == stats.n
    # The raw observations themselves would give other actions: the filter is not a no-op here.
    plain = module.greedy_actions(module.forward_inference({"obs": torch.as_tensor(RAW)})[
        "action_dist_inputs"]).numpy()
    assert not np.array_equal(plain, actions)


def test_the_exported_policy_normalizes_inside_the_graph(trained, tmp_path):
    _, path, _ = trained
    module = RLModule.from_checkpoint(path, allowed=[mean_std_filter])
    policy = torch.export.load(export_policy(module, tmp_path / "policy.pt2")).module()
    np.testing.assert_array_equal(policy(torch.as_tensor(RAW)).numpy(),
                                  greedy_env_actions(module, RAW))


def test_evaluate_plays_through_the_checkpoints_filter(trained, monkeypatch):
    algo, _, stats = trained
    seen = []

    def spy(module, obs):
        seen.append((module.env_to_module, obs))
        return greedy_env_actions(module, obs)

    monkeypatch.setattr(evaluate, "greedy_env_actions", spy)
    rows, _, _ = evaluate.play(algo, episodes=1, seed=0, render=False)
    connectors, obs = seen[0]
    assert len(seen) == rows[0][1]
    assert connectors.connectors[0].running_stats.n == stats.n  # saved statistics, not updated
    assert not connectors.update_stats
    assert obs.shape == (1, 4) and np.all(np.abs(obs) < 1)  # raw CartPole, normalized inside
    assert algo.env_runner_group.env_to_module_state[0]["running_stats"]["n"] == stats.n


def test_serve_takes_raw_observations_and_normalizes_them(trained):
    algo, path, _ = trained
    deployment = PolicyDeployment.func_or_class(path, allowed=[mean_std_filter],
                                                max_batch_size=1)
    assert deployment.space == algo.env_to_module.input_observation_space
    np.testing.assert_array_equal(deployment.act(RAW), algo.compute_actions(RAW))


@pytest.fixture(scope="module")
def dict_checkpoint(tmp_path_factory) -> str:
    with small_config(DictEnv, flatten_and_filter).build_algo() as algo:
        algo.train()
        return algo.save_to_path(tmp_path_factory.mktemp("dict"))


def test_a_flattened_dict_env_loads_acts_and_is_refused_where_it_cannot_be_served(dict_checkpoint,
                                                                                tmp_path):
    module = RLModule.from_checkpoint(dict_checkpoint, allowed=[DictEnv, flatten_and_filter])
    assert module.observation_space.shape == (5,)  # built for the flattened observations
    raw = {"mode": np.array([0, 2]), "pos": np.array([[1.0, 10.0], [3.0, 30.0]], np.float32)}
    assert greedy_env_actions(module, raw).shape == (2,)
    with pytest.raises(ConfigError, match="env_to_module_connector.*export_policy traces only"):
        export_policy(module, tmp_path / "policy.pt2")
    with pytest.raises(ValueError, match="Box or Discrete observations"):
        PolicyDeployment.func_or_class(dict_checkpoint, allowed=[DictEnv, flatten_and_filter])


@pytest.fixture(scope="module")
def discrete_checkpoint(tmp_path_factory) -> tuple[np.ndarray, np.ndarray, str]:
    """FrozenLake (Discrete(16) cells) with `env_to_module_connector=FlattenObservations` (the class
    is its own factory, and checkpoints may name it): (cells, the algorithm's actions, checkpoint)."""
    config = small_config("FrozenLake-v1", FlattenObservations).training(num_epochs=2)
    with config.build_algo() as algo:
        assert algo.observation_space.shape == (16,)  # the module's input: one-hot cells
        episodes = algo.env_runner_group.local_env_runner.sample(num_episodes=1)
        assert set(np.unique(episodes[0].observations)) <= {0.0, 1.0}  # runners record one-hots
        np.testing.assert_array_equal(episodes[0].observations.sum(axis=1), 1.0)
        weights = algo.learner_group.get_weights()
        algo.train()  # the learner trains on the one-hot observations the runner recorded
        assert any(not np.array_equal(weights[k], v) for k, v in algo.learner_group.get_weights()
                   .items())
        cells = np.arange(16)
        return cells, algo.compute_actions(cells), algo.save_to_path(tmp_path_factory.mktemp("fl"))


def test_discrete_observations_one_hot_alike_in_a_checkpoint_an_export_and_serve(
        discrete_checkpoint, tmp_path):
    cells, actions, path = discrete_checkpoint
    module = RLModule.from_checkpoint(path)  # no allowed=[...]: FlattenObservations is rlcourse's
    np.testing.assert_array_equal(module.env_to_module(cells), np.eye(16, dtype=np.float32))
    np.testing.assert_array_equal(greedy_env_actions(module, cells), actions)
    policy = torch.export.load(export_policy(module, tmp_path / "policy.pt2")).module()
    np.testing.assert_array_equal(policy(torch.as_tensor(cells)).numpy(), actions)
    deployment = PolicyDeployment.func_or_class(path, max_batch_size=1)
    np.testing.assert_array_equal(deployment.act(cells), actions)


@pytest.mark.parametrize("space, batch", [
    (gym.spaces.Discrete(4, start=-1), np.array([-1, 2, 0])),
    (gym.spaces.MultiDiscrete([2, 3], start=[1, 0]), np.array([[1, 2], [2, 0]])),
    (gym.spaces.Box(0, 1, (2, 2)), np.arange(8, dtype=np.float32).reshape(2, 2, 2))])
def test_the_traced_flatten_is_the_connectors(space, batch):
    connector = FlattenObservations()
    connector.recompute_output_observation_space(space, None)
    traced = TracedConnector(connector)
    np.testing.assert_array_equal(traced(torch.as_tensor(batch)).numpy(), connector(batch))
