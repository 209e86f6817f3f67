"""The server runner's episodes train the other algorithms unchanged (issue 35): DQN (off-policy,
epsilon-greedy, a replay buffer) and IMPALA/APPO (asynchronous sampling, V-trace) run train()
with a runner actor fed by a client.py process, and their learners update on its episodes."""

import gymnasium as gym
import numpy as np
import pytest
from external_helpers import OBS_SPACE, client_processes
from helpers import SMALL_MODEL, small_impala

from rlcourse.algorithms.appo.appo import APPOConfig
from rlcourse.algorithms.dqn.dqn import DQNConfig
from rlcourse.algorithms.sac.sac import SACConfig
from rlcourse.env.external import client
from rlcourse.env.external.env_runner_server_for_external_inference import (
    EnvRunnerServerForExternalInference,
)

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


def test_a_head_no_simulator_runs_is_refused():
    config = external(SACConfig()).environment(action_space=gym.spaces.Box(-1.0, 1.0, (1,)))
    with pytest.raises(ValueError, match="epsilon-greedy Q-values \\(DQN\\)"):
        EnvRunnerServerForExternalInference(config)
