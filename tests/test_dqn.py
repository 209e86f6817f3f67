"""DQN: the double-Q target against a hand computation, the runners' NumPy Q-network, bad settings
named at build time, remote runners with a checkpoint round trip. (Learning CartPole:
tests/test_learning.py.)"""

import json
import os
import signal
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import ray
import torch
from helpers import SLOW_RESTARTS, runner_module_in_a_fresh_process

from rlcourse.algorithms.algorithm import Algorithm
from rlcourse.algorithms.dqn import DQNConfig
from rlcourse.algorithms.dqn.dqn_learner import DQNLearner
from rlcourse.algorithms.dqn.dqn_rl_module import DefaultDQNModule
from rlcourse.algorithms.off_policy import build_replay_buffer, scheduled_value
from rlcourse.core.rl_module.numpy_mlp import EpsilonGreedy
from rlcourse.core.rl_module.rl_module import TorchNetwork
from rlcourse.env.env_runner import build_inference_module
from rlcourse.utils.validation import ConfigError

pytestmark = pytest.mark.timeout(120)

OBS_SPACE = gym.spaces.Box(-1, 1, (1,), np.float32)
ACT_SPACE = gym.spaces.Discrete(3)
# Hand-made Q-tables, one row per observation value 0 or 1: s = 0, s' = 1.
Q_ONLINE = torch.tensor([[0.5, 2.0, -1.0], [1.0, 5.0, 2.0]])
Q_TARGET = torch.tensor([[0.0, 0.0, 0.0], [3.0, 0.0, 4.0]])


def _learner_with_tables(double_q: bool) -> DQNLearner:
    config = DQNConfig().training(double_q=double_q, gamma=0.9)
    learner = DQNLearner(config, OBS_SPACE, ACT_SPACE)
    learner.module.compute_q_values = lambda obs: Q_ONLINE[obs[:, 0].long()]
    learner.module.compute_target_q_values = lambda obs: Q_TARGET[obs[:, 0].long()]
    return learner


@pytest.mark.parametrize("double_q", [True, False])
def test_double_q_target_against_a_hand_computation(double_q):
    batch = {"obs": torch.zeros(3, 1), "actions": torch.tensor([1, 1, 0]),
             "rewards": torch.tensor([1.0, 1.0, 2.0]), "new_obs": torch.ones(3, 1),
             "terminateds": torch.tensor([False, False, True]), "n_step": torch.tensor([2, 1, 2]),
             "weights": torch.ones(3)}
    _, metrics = _learner_with_tables(double_q).compute_loss(batch)
    # Double Q: the online net picks a* = argmax [1, 5, 2] = 1, the target net values it: 0.
    # Plain DQN: the target net's own maximum, 4. A terminated row never bootstraps.
    next_value = 0.0 if double_q else 4.0
    targets = np.array([1 + 0.9**2 * next_value, 1 + 0.9 * next_value, 2.0])
    q_taken = np.array([2.0, 2.0, 0.5])
    np.testing.assert_allclose(metrics["td_error"].numpy(), q_taken - targets, rtol=1e-6)


def test_loss_is_huber_weighted_by_importance_weights():
    batch = {"obs": torch.zeros(2, 1), "actions": torch.tensor([1, 0]),
             "rewards": torch.tensor([1.5, 0.0]), "new_obs": torch.ones(2, 1),
             "terminateds": torch.tensor([True, True]), "n_step": torch.tensor([1, 1]),
             "weights": torch.tensor([0.5, 1.0])}
    loss, metrics = _learner_with_tables(True).compute_loss(batch)
    # td = [2.0 - 1.5, 0.5 - 0.0] = [0.5, 0.5]: both inside the quadratic part, 0.5 * td^2 each.
    np.testing.assert_allclose(metrics["td_error"].numpy(), [0.5, 0.5])
    assert float(loss) == pytest.approx((0.5 * 0.125 + 1.0 * 0.125) / 2)


@pytest.mark.parametrize("dueling", [True, False])
def test_runners_numpy_q_network_matches_the_learners(dueling):
    config = DQNConfig().training(dueling=dueling).rl_module(
        model_config={"fcnet_hiddens": [16, 8], "fcnet_activation": "relu"})
    space = gym.spaces.Box(-1, 1, (4,), np.float32)
    learner = DQNLearner(config, space, ACT_SPACE)
    weights = learner.get_weights(inference_only=True)
    assert all(k.startswith("q.") for k in weights) and ("q.value.weight" in weights) == dueling
    runner_module = build_inference_module(config, space, ACT_SPACE, seed=0)
    assert isinstance(runner_module.head, EpsilonGreedy) and runner_module.head.epsilon == 1.0
    runner_module.set_state(weights)
    runner_module.head.epsilon = 0.0
    obs = np.random.default_rng(0).uniform(-1, 1, (64, 4)).astype(np.float32)
    expected = learner.module.compute_q_values(torch.as_tensor(obs)).detach().numpy()
    np.testing.assert_allclose(runner_module.action_dist_inputs(obs), expected, rtol=1e-5,
                               atol=1e-6)
    greedy = expected.argmax(axis=1)
    assert (runner_module.forward_exploration(obs)["actions"] == greedy).all()  # epsilon 0
    runner_module.head.epsilon = 1.0
    random_actions = runner_module.forward_exploration(np.repeat(obs[:1], 3000, axis=0))["actions"]
    assert np.bincount(random_actions, minlength=3).min() > 900  # uniform over the 3 actions


def test_dqn_config_and_its_runner_import_no_torch():
    """Runners stay light with DQN too: the config validates and a runner acts without torch."""
    assert runner_module_in_a_fresh_process("rlcourse.algorithms.dqn.DQNConfig", "CartPole-v1") == (
        "InferenceModule", False)


def test_epsilon_schedule_is_piecewise_linear():
    schedule = [[0, 1.0], [10_000, 0.05], [20_000, 0.01]]
    assert scheduled_value(schedule, 0) == 1.0
    assert scheduled_value(schedule, 5_000) == pytest.approx(0.525)
    assert scheduled_value(schedule, 15_000) == pytest.approx(0.03)
    assert scheduled_value(schedule, 10**9) == pytest.approx(0.01)


@pytest.mark.parametrize("settings, setting, words", [
    ({"replay_buffer_config": {"capacity": 16}}, "replay_buffer_config", "smaller than a train batch"),
    ({"n_step": 0}, "n_step", ">= 1"),
    ({"tau": 0.0}, "tau", "(0.0, 1.0]"),
    ({"tau": 1.5}, "tau", "(0.0, 1.0]"),
    ({"epsilon": [[0, 1.0], [10_000, 0.1], [5_000, 0.05]]}, "epsilon", "do not increase"),
    ({"epsilon": [[0, 1.0], [0, 0.1]]}, "epsilon", "do not increase"),
    ({"replay_buffer_config": {"type": "ReplayBuffer"}}, "replay_buffer_config", "'type'"),
    ({"training_intensity": 0}, "training_intensity", "None"),
    ({"training_intensity": float("inf")}, "training_intensity", "finite number > 0"),
    ({"replay_buffer_config": {"capacity": 1e5}}, "replay_buffer_config",
     "'capacity' (env steps) must be a whole number"),
    ({"replay_buffer_config": {"capcity": 10}}, "replay_buffer_config", "unknown keys ['capcity']"),
    ({"replay_buffer_config": {"storage_unit": "episodes"}}, "replay_buffer_config",
     "unknown keys ['storage_unit']"),
    ({"replay_buffer_config": {"alpha": float("inf")}}, "replay_buffer_config",
     "'alpha' must be a finite"),
    ({"epsilon": [[0, 1.0], [1e4, 0.05]]}, "epsilon", "must be whole numbers >= 0 (10000, not 1e4)"),
    ({"epsilon": [[0, 1.0], [10_000, float("nan")]]}, "epsilon", "values in [0, 1]"),
])
def test_bad_settings_fail_at_build_time_naming_the_setting(settings, setting, words):
    config = DQNConfig().environment("CartPole-v1").training(**settings)
    with pytest.raises(ConfigError, match=f"config.training\\({setting}=") as error:
        config.build_algo()
    assert error.value.setting == setting and words in str(error.value)


def test_numpy_whole_numbers_are_whole_numbers_in_the_replay_settings():
    config = DQNConfig().environment("CartPole-v1").training(
        replay_buffer_config={"capacity": np.int64(1000)},
        epsilon=[[np.int64(0), 1.0], [np.int64(500), np.float32(0.1)]])
    config.validate()
    assert build_replay_buffer(config).capacity == 1000


def test_a_box_action_space_fails_at_build_time():
    with pytest.raises(ConfigError, match=r"env='Pendulum-v1'.*Discrete") as error:
        DQNConfig().environment("Pendulum-v1").build_algo()
    assert error.value.setting == "env"


class ZeroHeadDQNModule(DefaultDQNModule):
    """A custom Q-module: the default one with its advantage head starting at zero."""

    def setup(self) -> None:
        super().setup()
        torch.nn.init.zeros_(self.q.advantages.weight)


def test_a_custom_dqn_module_acts_epsilon_greedily_on_runners(algo_factory):
    algo = algo_factory(_small_config(0).rl_module(rl_module_class=ZeroHeadDQNModule))
    for _ in range(6):
        result = algo.train()
    assert result["learners"]["default_policy"]["num_updates"] > 0
    runner_module = algo.env_runner_group.local_env_runner.module
    assert isinstance(runner_module.network, TorchNetwork)
    assert runner_module.head.epsilon == pytest.approx(algo.runner_epsilon())
    obs = np.random.default_rng(0).uniform(-0.2, 0.2, (32, 4)).astype(np.float32)
    np.testing.assert_array_equal(runner_module.forward_inference(obs)["actions"],
                                  algo.compute_actions(obs))


def test_compute_actions_explores_epsilon_greedily(algo_factory):
    algo = algo_factory(_small_config(0))  # nothing sampled yet: epsilon is 1.0
    obs = np.zeros((2000, 4), np.float32)
    greedy = algo.compute_actions(obs)
    assert len(set(greedy.tolist())) == 1
    explored = np.bincount(algo.compute_actions(obs, explore=True), minlength=2)
    assert explored.min() > 900  # uniformly random at epsilon 1.0


def test_a_module_without_q_values_is_refused():
    from rlcourse.core.rl_module.rl_module import DefaultActorCriticModule

    config = DQNConfig().environment("CartPole-v1").rl_module(
        rl_module_class=DefaultActorCriticModule)
    with pytest.raises(ConfigError, match="subclass .*DefaultDQNModule"):
        config.build_algo()


def _small_config(num_env_runners: int, buffer: str = "PrioritizedEpisodeReplayBuffer"
                  ) -> DQNConfig:
    return (DQNConfig().environment("CartPole-v1").debugging(seed=0)
            .env_runners(num_env_runners=num_env_runners, num_cpus_per_env_runner=0.5,
                         rollout_fragment_length=16)
            .training(num_steps_sampled_before_learning_starts=64, training_intensity=4,
                      target_network_update_freq=50, n_step=3,
                      replay_buffer_config={"type": buffer, "capacity": 2000},
                      store_buffer_in_checkpoints=True)
            .rl_module(model_config={"fcnet_hiddens": [16]}))


def _weights(algo) -> dict[str, np.ndarray]:
    return algo.learner_group.get_weights()


@pytest.mark.parametrize("num_env_runners, buffer", [(0, "EpisodeReplayBuffer"),
                                                     (2, "PrioritizedEpisodeReplayBuffer")])
def test_checkpoint_round_trip_continues_exactly(num_env_runners, buffer, ray_session, algo_factory,
                                                 tmp_path: Path):
    algo = algo_factory(_small_config(num_env_runners, buffer))
    for _ in range(6):
        result = algo.train()
    assert result["learners"]["default_policy"]["num_updates"] > 0
    assert result["env_runners"]["num_env_steps_sampled"] == 16 * max(1, num_env_runners)
    path = algo.save_to_path(tmp_path / "ckpt")
    later = [algo.train() for _ in range(3)]
    state = json.loads(next(Path(path).glob("v-*/state.json")).read_text())
    assert len(state["dqn"]["replay_buffer"]["episodes"]) > 0  # store_buffer_in_checkpoints
    restored = Algorithm.from_checkpoint(path)
    try:
        again = [restored.train() for _ in range(3)]
        for a, b in zip(later, again, strict=True):
            for key in ("episode_return_mean", "epsilon", "num_env_steps_sampled_lifetime"):
                assert a["env_runners"][key] == b["env_runners"][key], key
            assert a["learners"]["default_policy"] == b["learners"]["default_policy"]
        for name, value in _weights(algo).items():
            np.testing.assert_array_equal(_weights(restored)[name], value, err_msg=name)
        evaluation = restored.evaluate()  # greedy, on an evaluation runner in this process
        assert evaluation["env_runners"]["num_episodes"] == 10
    finally:
        restored.stop()


def test_the_buffer_stays_out_of_checkpoints_unless_asked(algo_factory, tmp_path: Path):
    # The module class named explicitly: a checkpoint may name the package's own DQN module.
    algo = algo_factory(_small_config(0).training(store_buffer_in_checkpoints=False)
                        .rl_module(rl_module_class=DefaultDQNModule))
    for _ in range(5):
        algo.train()
    state = json.loads(next(Path(algo.save_to_path(tmp_path / "ckpt")).glob("v-*/state.json"))
                       .read_text())
    assert state["dqn"]["replay_buffer"] is None
    restored = Algorithm.from_checkpoint(tmp_path / "ckpt")
    try:
        assert len(restored.replay_buffer) == 0
        result = restored.train()  # learns again from the refilled buffer
        assert result["replay_buffer"]["num_env_steps_stored"] == 16
    finally:
        restored.stop()


def test_epsilon_travels_beside_the_weights_not_inside_them(algo_factory):
    algo = algo_factory(_small_config(0).training(epsilon=[[0, 1.0], [200, 0.1]]))
    for _ in range(8):
        algo.train()
    assert all(k.startswith("q.") for k in algo._runner_weights())  # weights are only weights
    runner = algo.env_runner_group.local_env_runner
    assert isinstance(runner.module.head, EpsilonGreedy)
    assert runner.module.head.epsilon == pytest.approx(algo.runner_epsilon())
    assert algo.runner_epsilon() < 1.0


def test_a_killed_runner_is_restarted_and_explores_with_the_current_epsilon(ray_session,
                                                                            algo_factory):
    algo = algo_factory(_small_config(2).training(epsilon=[[0, 1.0], [400, 0.1]])
                        .fault_tolerance(**SLOW_RESTARTS))
    for _ in range(3):
        algo.train()
    group = algo.env_runner_group
    os.kill(ray.get(group.remote_env_runners[0].ping.remote()), signal.SIGKILL)
    for _ in range(20):
        result = algo.train()
        if result["env_runners"]["num_env_runner_restarts"] and group.num_healthy_env_runners == 2:
            break
    for _ in range(3):
        result = algo.train()
    assert result["env_runners"]["num_env_runner_restarts"] == 1
    assert result["env_runners"]["num_env_steps_sampled"] == 32  # both runners sample again
    assert result["learners"]["default_policy"]["num_updates"] > 0
    epsilon = algo.runner_epsilon()
    assert epsilon < 1.0
    # (A lambda: cloudpickle ships it by value; runner actors cannot import this test module.)
    held = group.foreach_env_runner(lambda runner: (runner.module.head.epsilon, runner.weights_seq_no))
    for runner_epsilon, version in held:
        assert runner_epsilon == pytest.approx(epsilon) and version == group.weights_seq_no


def test_two_learners_take_the_same_steps_and_return_every_rows_td_error(ray_session,
                                                                           algo_factory):
    algo = algo_factory(_small_config(0).learners(num_learners=2, num_cpus_per_learner=0.5))
    batch_rows = 2 * algo.config.train_batch_size_per_learner
    for _ in range(6):
        algo.train()
    batch = algo.replay_buffer.sample(batch_rows, n_step=3)
    results = algo.learner_group.update_from_batch(batch, num_env_steps_sampled_lifetime=96)
    assert results["td_error"].shape == (batch_rows,) and results["num_env_steps_trained"] == batch_rows
    first, second = algo.learner_group.foreach_learner("get_weights")
    for name, value in first.items():
        np.testing.assert_array_equal(second[name], value, err_msg=name)
