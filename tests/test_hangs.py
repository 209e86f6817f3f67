"""Hangs end: an env that always raises, always hangs, is always slow or never ends its episodes
stops training with a clear error within a bounded time, on runner actors and in this process."""

import sys
import time

import fault_envs
import pytest
import ray.cloudpickle
from fault_envs import CountingEnv
from helpers import small_impala, small_ppo

from rlcourse.algorithms.ppo.ppo import PPOConfig
from rlcourse.env.env_runner import SampleTimeoutError
from rlcourse.env.env_runner_health import EnvRunnerFailure
from rlcourse.env.sub_env_restarts import SubEnvFailure

pytestmark = pytest.mark.timeout(180)

ray.cloudpickle.register_pickle_by_value(fault_envs)
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

SMALL_BATCH = {"train_batch_size_per_learner": 400, "minibatch_size": 200, "num_epochs": 1}


def config_for(num_env_runners: int, **env_config) -> PPOConfig:
    return (small_ppo().environment(CountingEnv, env_config=env_config)
            .env_runners(num_env_runners=num_env_runners, num_envs_per_env_runner=2,
                         num_cpus_per_env_runner=0.5)
            .training(**SMALL_BATCH))


@pytest.mark.parametrize("num_env_runners", [0, 1])
def test_a_sub_env_that_always_raises_is_not_rebuilt_forever(num_env_runners, ray_session,
                                                             algo_factory):
    config = (config_for(num_env_runners, failure_rate=1.0)
              .fault_tolerance(restart_failed_sub_environments=True,
                               num_consecutive_sub_env_failures_tolerance=3))
    algo = algo_factory(config)
    with pytest.raises(SubEnvFailure) as err:
        algo.train()
    message = str(err.value)
    assert "Sub-env 0 of EnvRunner" in message and "CountingEnv" in message
    assert "failed 4 times in a row" in message and "CountingEnv crashed" in message
    assert "num_consecutive_sub_env_failures_tolerance" in message  # the setting to change


@pytest.mark.parametrize("algo_config", [
    config_for(1, hang_always=True),
    # IMPALA keeps requests in flight without a ray.get timeout: a runner that owes an answer for
    # sample_timeout_s is failed all the same.
    small_impala().environment(CountingEnv, env_config={"hang_always": True})
    .env_runners(num_env_runners=1, num_cpus_per_env_runner=0.5)
    .training(train_batch_size_per_learner=200),
], ids=["ppo", "impala_async"])
def test_a_runner_whose_env_always_hangs_ends_the_run(algo_config, ray_session, algo_factory):
    """Each request times out after sample_timeout_s, the runner is killed and restarted; after
    num_consecutive_env_runner_failures_tolerance such failures in a row the run stops."""
    config = (algo_config.copy().env_runners(sample_timeout_s=2)
              .fault_tolerance(num_consecutive_env_runner_failures_tolerance=2))
    algo = algo_factory(config)
    start = time.perf_counter()
    with pytest.raises(EnvRunnerFailure, match=r"failed 2 requests in a row \(sample_timeout_s=2\)"):
        algo.train()
    assert time.perf_counter() - start < 90
    assert algo.env_runner_group.num_env_runner_failures == 2


def test_default_settings_end_an_always_hanging_env_within_minutes():
    config = small_ppo()
    bound_s = config.num_consecutive_env_runner_failures_tolerance * (
        config.sample_timeout_s + config.env_runner_health_probe_timeout_s)
    assert bound_s <= 10 * 60


class StepCountingEnv(CountingEnv):
    steps = 0  # env steps taken by every instance in this process

    def step(self, action):
        type(self).steps += 1
        return super().step(action)


def test_the_local_runner_honours_sample_timeout_s(algo_factory):
    config = config_for(0, step_delay=0.01).environment(StepCountingEnv)
    algo = algo_factory(config.env_runners(sample_timeout_s=0.5))
    StepCountingEnv.steps = 0
    start = time.perf_counter()
    with pytest.raises(SampleTimeoutError, match=r"EnvRunner in this process .* sample_timeout_s=0.5"
                       r".*to also end an env.step that never returns, sample on runner actors"):
        algo.train()  # the batch's 400 env steps of 10 ms each would take 2 s or more
    # Each step sleeps 10 ms, so 0.5 s holds at most ~50 per sub-env, however busy the machine.
    assert 0 < StepCountingEnv.steps < 200
    assert time.perf_counter() - start < 10  # only a guard against a hang


def test_sample_timeout_s_says_the_local_runner_cannot_end_a_hung_env_step():
    """Only runner actors are ended; the runner in this process checks between env steps, so one
    env.step that never returns hangs the driver: the setting's docstring says so, as the
    SampleTimeoutError does (test_the_local_runner_honours_sample_timeout_s)."""
    doc = " ".join(PPOConfig.env_runners.__doc__.split())
    assert "checks it only between env steps, so an env.step that never returns hangs it" in doc
    assert "sample on runner actors to end one" in doc


@pytest.mark.parametrize("evaluation_num_env_runners", [0, 1])
def test_evaluate_on_episodes_that_never_end_stops(evaluation_num_env_runners, ray_session,
                                                   algo_factory):
    config = (config_for(0, never_ends=True).env_runners(sample_timeout_s=1)
              .evaluation(evaluation_num_env_runners=evaluation_num_env_runners)
              .fault_tolerance(num_consecutive_env_runner_failures_tolerance=1))
    algo = algo_factory(config)
    start = time.perf_counter()
    error = SampleTimeoutError if evaluation_num_env_runners == 0 else EnvRunnerFailure
    with pytest.raises(error, match="sample_timeout_s=1"):
        algo.evaluate()
    assert time.perf_counter() - start < 30
