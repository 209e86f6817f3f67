"""The server runner's episodes train the other algorithms unchanged (issue 35): DQN (off-policy,
epsilon-greedy, a replay buffer), IMPALA/APPO (asynchronous sampling, V-trace) and SAC (a squashed
Gaussian into the Box's bounds) run train() with a runner actor fed by a client.py process, and
their learners update on its episodes."""

import json

import gymnasium as gym
import numpy as np
import pytest
import torch
from external_helpers import OBS_SPACE, client_processes
from helpers import SMALL_MODEL, small_impala

from rlcourse.algorithms.appo.appo import APPOConfig
from rlcourse.algorithms.dqn.dqn import DQNConfig
from rlcourse.algorithms.sac.sac import SACConfig
from rlcourse.algorithms.sac.sac_rl_module import DefaultSACModule, squashed_gaussian_logp
from rlcourse.core.rl_module.numpy_mlp import SquashedGaussian
from rlcourse.env.env_runner import build_inference_module
from rlcourse.env.external import client
from rlcourse.env.external.env_runner_server_for_external_inference import (
    EnvRunnerServerForExternalInference,
)
from rlcourse.env.external.server_side_inference import act

pytestmark = pytest.mark.timeout(60)


def external(config):
    """`config` with one server runner actor for CartPole-shaped simulators instead of an env."""
    return (config.environment(observation_space=OBS_SPACE, action_space=gym.spaces.Discrete(2),
                               env_config={"port": 0})
            .env_runners(env_runner_cls=EnvRunnerServerForExternalInference, num_env_runners=1,
                         num_cpus_per_env_runner=0.5).debugging(seed=0))


@pytest.mark.parametrize("inference", ["client", "server"])
def test_dqn_fills_its_replay_buffer_and_learns_from_a_simulator_process(inference, ray_session,
                                                                          algo_factory):
    algo = algo_factory(external(DQNConfig().rl_module(model_config=SMALL_MODEL).training(
        num_steps_sampled_before_learning_starts=200, epsilon=[[0, 1.0], [400, 0.1]])))
    with client_processes(algo, 100, "--inference", inference) as [simulator]:
        for _ in range(40):
            result = algo.train()
            if result["num_env_steps_sampled_lifetime"] >= 500:
                break
        assert simulator.poll() is None
    sampled = result["num_env_steps_sampled_lifetime"]
    # Every env step the simulator sent is in the replay buffer, and DQN updated from it.
    assert result["replay_buffer"]["num_env_steps_stored"] == sampled >= 500, result
    learner = result["learners"]["default_policy"]
    assert result["num_env_steps_trained_lifetime"] > 0 and np.isfinite(learner["qf_loss"])
    # The simulator (or the runner, server-side) explores with the schedule's epsilon: it comes
    # with the weights.
    [state] = algo.env_runner_group.foreach_env_runner(lambda runner: runner.state_message()[0])
    assert state["epsilon"] == pytest.approx(result["env_runners"]["epsilon"]) and state["epsilon"] < 1


@pytest.mark.parametrize("config", [small_impala(), APPOConfig().rl_module(model_config=SMALL_MODEL)],
                         ids=["IMPALA", "APPO"])
def test_impala_and_appo_learn_from_a_simulator_process(config, ray_session, algo_factory):
    algo = algo_factory(external(config))
    with client_processes(algo, 100):
        results = [algo.train() for _ in range(3)]
    learner = results[-1]["learners"]["default_policy"]
    assert results[-1]["num_env_steps_trained_lifetime"] > 0 and np.isfinite(learner["total_loss"])
    # The client's log-probabilities are the learner's (same weights): importance ratios near 1.
    assert 0.8 < learner["mean_importance_ratio"] < 1.25, learner
    assert results[-1]["env_runners"]["num_external_episodes_received"] > 0


def test_a_client_acts_epsilon_greedily_with_the_epsilon_it_is_sent():
    q_values = np.array([0.0, 2.0, 1.0])
    rng = np.random.default_rng(0)
    assert client.epsilon_greedy(q_values, 0.0, rng) == (1, 0.0)
    picks = [client.epsilon_greedy(q_values, 0.3, rng) for _ in range(3000)]
    counts = np.bincount([action for action, _ in picks], minlength=3) / len(picks)
    np.testing.assert_allclose(counts, [0.1, 0.8, 0.1], atol=0.03)
    for action, logp in picks[:20]:  # each pick's log-probability under the rule
        assert logp == pytest.approx(np.log(0.1 + 0.7 * (action == 1)))


def pendulum(config):
    """`external(config)` for Pendulum-shaped simulators (a Box of actions in [-2, 2])."""
    env = gym.make("Pendulum-v1")
    return external(config).environment(observation_space=env.observation_space,
                                        action_space=env.action_space)


def test_a_sac_client_acts_as_the_runners_squashed_gaussian():
    config = pendulum(SACConfig().rl_module(model_config={"fcnet_hiddens": [16]}))
    torch.manual_seed(0)
    module = DefaultSACModule(config.observation_space, config.action_space, config.get_model_config())
    with torch.no_grad():
        module.pi[-1].weight.mul_(30.0)  # means far out (tanh saturates), log-stds past the clamp
    weights = module.get_state(inference_only=True)
    runner = EnvRunnerServerForExternalInference(config)
    try:
        runner.set_weights(weights)
        policy = client.Policy(json.loads(json.dumps(runner.config_message())), seed=3)  # as sent
        policy.set_state(json.loads(json.dumps(runner.state_message()[0])))
    finally:
        runner.stop()
    in_process = build_inference_module(config, config.observation_space, config.action_space, 3)
    in_process.set_state(weights)
    obs = np.random.default_rng(0).normal(size=(50, 3)).astype(np.float32)
    noise = np.random.default_rng(3).standard_normal((50, 1), dtype=np.float32)  # the client's draws
    for explore in (True, False):  # the same actions as an in-process runner, from the same seed
        policy.explore, server_rng = explore, np.random.default_rng(3)
        for i, o in enumerate(obs):
            action, logp = policy.act(o)
            assert action.dtype == np.float32 and -2.0 <= action[0] <= 2.0
            runner_out = (in_process.forward_exploration if explore else in_process.forward_inference)(
                o[None])
            assert np.array_equal(action, runner_out["actions"][0])
            assert act(runner.network, runner.head, o, server_rng, explore) == (action, logp)
            # log pi(tanh(u)) as SAC's module defines it, u = mean + std * noise (greedy: the mean),
            # in float64 (float32's u - mean would not give back std * noise exactly)
            mean, log_std = module.forward_inference({"obs": torch.as_tensor(o[None])})[
                "action_dist_inputs"].double().chunk(2, dim=-1)
            u = mean + log_std.exp() * float(noise[i, 0] if explore else 0.0)
            assert logp == pytest.approx(float(squashed_gaussian_logp(u, mean, log_std)), rel=1e-4,
                                         abs=1e-4)
    assert len({float(policy.act(o)[0][0]) for o in obs}) > 10  # not all on the bounds


@pytest.mark.parametrize("inference", ["client", "server"])
def test_sac_learns_from_a_simulator_process(inference, ray_session, algo_factory):
    algo = algo_factory(pendulum(SACConfig().rl_module(model_config=SMALL_MODEL).training(
        num_steps_sampled_before_learning_starts=200, train_batch_size_per_learner=64,
        training_intensity=None)))
    with client_processes(algo, 200, "--env", "Pendulum-v1", "--inference", inference):
        for _ in range(10):
            result = algo.train()
            if result["num_env_steps_trained_lifetime"] > 0:
                break
    # The simulator's episodes filled SAC's replay buffer, and its learner updated from them.
    sampled = result["num_env_steps_sampled_lifetime"]
    assert result["replay_buffer"]["num_env_steps_stored"] == sampled >= 200, result
    learner = result["learners"]["default_policy"]
    assert result["num_env_steps_trained_lifetime"] > 0, result
    assert all(np.isfinite(learner[k]) for k in ("qf_loss", "policy_loss", "alpha_loss")), learner
    assert result["env_runners"]["num_external_episodes_received_lifetime"] > 0


class ScaledGaussian(SquashedGaussian):
    """A head of the runners' no client runs (client.py knows the built-in heads only)."""


class OwnHeadSAC(SACConfig):
    def get_action_head(self, action_space, worker_index=0):
        return ScaledGaussian(action_space)


class OwnSACModule(DefaultSACModule):
    """A custom module: runners would run torch, which a client has not."""


@pytest.mark.parametrize("config, named", [
    (SACConfig().rl_module(rl_module_class=OwnSACModule), "rl_module_class"),
    (OwnHeadSAC(), "got ScaledGaussian")], ids=["custom module", "custom head"])
def test_what_no_simulator_runs_is_refused(config, named):
    with pytest.raises(ValueError, match=f"SAC's squashed Gaussian.*{named}"):
        EnvRunnerServerForExternalInference(pendulum(config))
