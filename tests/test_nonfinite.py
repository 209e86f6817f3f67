"""No silent NaNs: NaN or infinite observations and rewards (or a reward of None) stop at the runner,
with an error naming the env, the sub-env and the field, or, with restart_failed_sub_environments,
cost their episode; a non-finite update stops the Learner before it changes any weight."""

import sys

import fault_envs
import numpy as np
import pytest
import ray.cloudpickle
from fault_envs import BadValueEnv
from helpers import small_ppo

from rlcourse.algorithms.ppo.ppo import PPOConfig
from rlcourse.algorithms.ppo.ppo_learner import PPOLearner
from rlcourse.core.learner.learner import NonFiniteUpdateError
from rlcourse.env.env_runner import NonFiniteEnvData
from rlcourse.env.multi_agent_env import make_multi_agent
from rlcourse.env.multi_agent_env_runner import MultiAgentEnvRunner
from rlcourse.env.single_agent_env_runner import SingleAgentEnvRunner

pytestmark = pytest.mark.timeout(180)

ray.cloudpickle.register_pickle_by_value(fault_envs)
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

SMALL_BATCH = {"train_batch_size_per_learner": 400, "minibatch_size": 200, "num_epochs": 1}


def config_for(bad: str, num_env_runners: int, **env_config) -> PPOConfig:
    return (small_ppo().environment(BadValueEnv, env_config={"bad": bad, **env_config})
            .env_runners(num_env_runners=num_env_runners, num_envs_per_env_runner=3,
                         num_cpus_per_env_runner=0.5)
            .training(**SMALL_BATCH).debugging(seed=0))


@pytest.mark.parametrize(("bad", "field"), [("nan_obs", "'obs'"), ("inf_reward", "'reward'"),
                                            ("none_reward", "'reward'")])
def test_local_runner_names_env_sub_env_and_field(bad, field, algo_factory):
    algo = algo_factory(config_for(bad, 0, bad_sub_env=2))
    weights = algo.learner_group.get_weights()
    with pytest.raises(NonFiniteEnvData) as err:
        algo.train()
    message = str(err.value)
    assert "BadValueEnv" in message and "EnvRunner in this process" in message
    assert "sub-env 2" in message and field in message
    assert "restart_failed_sub_environments=True" in message  # the way to go on
    for name, value in algo.learner_group.get_weights().items():  # nothing reached the learner
        np.testing.assert_array_equal(value, weights[name])


@pytest.mark.parametrize(("bad", "field"), [("nan_obs", "'obs'"), ("none_reward", "'reward'")])
def test_remote_runner_names_env_runner_sub_env_and_field(bad, field, ray_session, algo_factory):
    algo = algo_factory(config_for(bad, 1, bad_sub_env=1))
    with pytest.raises(NonFiniteEnvData) as err:  # Ray's error for it is also a NonFiniteEnvData
        algo.train()
    message = str(err.value)
    assert "BadValueEnv" in message and "EnvRunner 1," in message
    assert "sub-env 1" in message and field in message


@pytest.mark.parametrize("num_env_runners", [0, 1])
def test_with_sub_env_restarts_bad_steps_cost_their_episode_only(num_env_runners, ray_session,
                                                                   algo_factory):
    config = (config_for("nan_obs", num_env_runners, bad_rate=0.01)
              .fault_tolerance(restart_failed_sub_environments=True))
    algo = algo_factory(config)
    for _ in range(3):
        result = algo.train()
    assert result["env_runners"]["num_sub_env_restarts_lifetime"] >= 3  # ~12 expected in 1200 steps
    assert all(np.isfinite(v).all() for v in algo.learner_group.get_weights().values())
    assert np.isfinite(result["learners"]["default_policy"]["total_loss"])


def test_a_bad_last_observation_of_an_episode_is_found():
    """The last observation of an episode comes in infos["final_obs"], not in the buffer."""
    runner = SingleAgentEnvRunner(PPOConfig().environment("CartPole-v1"))
    obs = np.zeros((4, 2, 3), np.float32)
    rewards = np.zeros((3, 2), np.float32)
    runner._check_finite(obs, rewards, {(1, 0): np.zeros(3)})
    with pytest.raises(NonFiniteEnvData, match=r"sub-env 1, .* at time step 2"):
        runner._check_finite(obs, rewards, {(1, 1): np.array([0, np.inf, 0])})


@pytest.mark.parametrize(("bad", "field"), [("nan_obs", "'obs'"), ("inf_reward", "'reward'"),
                                            ("none_reward", "'reward'")])
def test_multi_agent_runner_names_env_agent_and_field(bad, field):
    config = (small_ppo().environment(make_multi_agent(BadValueEnv),
                                      env_config={"num_agents": 2, "bad": bad, "bad_at_step": 3})
              .multi_agent(policies={"default_policy"}).debugging(seed=0))
    runner = MultiAgentEnvRunner(config)
    with pytest.raises(NonFiniteEnvData, match=rf"agent 0 .* at time step \d+ \(field {field}\)"
                       ) as err:
        runner.sample(num_timesteps=20)
    assert "BadValueEnv" in str(err.value)
    assert "restart_failed_sub_environments" not in str(err.value)  # refused for multi-agent


class NaNLossLearner(PPOLearner):
    def compute_loss(self, batch):
        loss, metrics = super().compute_loss(batch)
        return loss * float("nan"), metrics


class NaNLossConfig(PPOConfig):
    def get_default_learner_class(self) -> type:
        return NaNLossLearner


def test_a_non_finite_loss_stops_the_learner_before_the_weights_change(algo_factory):
    algo = algo_factory(small_ppo(NaNLossConfig).environment("CartPole-v1").training(**SMALL_BATCH))
    weights = algo.learner_group.get_weights()
    with pytest.raises(NonFiniteUpdateError, match="grad_clip") as err:
        algo.train()
    assert "policy_loss=" in err.value.__notes__[0]  # the minibatch's loss terms
    for name, value in algo.learner_group.get_weights().items():
        np.testing.assert_array_equal(value, weights[name])
