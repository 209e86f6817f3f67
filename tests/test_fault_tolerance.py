"""Real faults: runner processes SIGKILLed mid-run, sub-envs that raise, a hung env, a dead learner."""

import os
import random
import signal
import sys
import threading
import time
import traceback
from types import SimpleNamespace

import fault_envs
import numpy as np
import psutil
import pytest
import ray.cloudpickle
from fault_envs import CountingEnv
from helpers import SLOW_RESTARTS, small_ppo

from rlcourse.algorithms.ppo.ppo import PPOConfig
from rlcourse.algorithms.ppo.ppo_learner import PPOLearner
from rlcourse.callbacks.callbacks import Callbacks
from rlcourse.connectors.env_to_module import MeanStdFilter
from rlcourse.core.learner.learner_group import LearnerFailure
from rlcourse.course.tuned_example import load_tuned_example
from rlcourse.course.tuned_examples_suite import TUNED_EXAMPLES
from rlcourse.env.env_runner_health import EnvRunnerFailure, EnvRunnerHealth
from rlcourse.env.single_agent_env_runner import SingleAgentEnvRunner

pytestmark = pytest.mark.timeout(600)

# Runner actors cannot import the tests folder: ship these modules' classes by value.
ray.cloudpickle.register_pickle_by_value(fault_envs)
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

SMALL_BATCH = {"train_batch_size_per_learner": 1000, "minibatch_size": 250, "num_epochs": 2}


def actor_pids(title: str) -> list[int]:
    """Processes of this test session's Ray actors whose title starts with `title`."""
    pids = []
    for process in psutil.Process().children(recursive=True):  # Ray's workers descend from us
        try:
            if process.cmdline()[:1] and process.cmdline()[0].startswith(title):
                pids.append(process.pid)
        except psutil.NoSuchProcess:
            pass
    return pids


class CountRecreated(Callbacks):
    recreated: list[int] = []

    def on_env_runners_recreated(self, *, algorithm, env_runner_indices, is_evaluation, **kwargs):
        CountRecreated.recreated += env_runner_indices


class RecordingPPOLearner(PPOLearner):
    """Remembers every chunk it trains on: (episode id, t_started, the observations' step counters)."""

    def update(self, episodes, num_minibatches=None):
        self.seen = getattr(self, "seen", [])
        self.seen += [(e.id_, e.t_started, e.observations[:, 0].copy()) for e in episodes]
        return super().update(episodes, num_minibatches)


class RecordingPPOConfig(PPOConfig):
    def get_default_learner_class(self) -> type:
        return RecordingPPOLearner


@pytest.mark.learning
def test_ppo_survives_20_runner_kills_and_still_learns(ray_session, algo_factory):
    """SIGKILL a runner process at 20 random moments; each restart is counted, learning goes on (the
    course's CartPole settings: 2 runners of 4 sub-envs, seed 0)."""
    CountRecreated.recreated = []
    config = load_tuned_example(TUNED_EXAMPLES / "ppo" / "cartpole_ppo.py").config
    algo = algo_factory(config.callbacks(CountRecreated).fault_tolerance(**SLOW_RESTARTS))
    group = algo.env_runner_group
    kills: list[int] = []

    def killer():
        rng = random.Random(0)
        while len(kills) < 20:
            time.sleep(rng.uniform(0.1, 0.8))
            # Kill again only once the last kill's restart has been seen, so each is counted once.
            pids = actor_pids("ray::SingleAgentEnvRunner")
            if group.num_env_runner_restarts == len(kills) and len(pids) == 2:
                os.kill(rng.choice(pids), signal.SIGKILL)
                kills.append(1)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    result = algo.train()
    # Train through all 20 kills however slowly a busy machine restarts runners (the timeout above
    # ends a test whose kills stall), then give learning an env-step budget of its own.
    while thread.is_alive() or result["env_runners"]["num_env_runner_restarts"] < len(kills):
        result = algo.train()
    budget = result["num_env_steps_sampled_lifetime"] + 400_000
    while (result["env_runners"]["episode_return_mean"] < 400
           and result["num_env_steps_sampled_lifetime"] < budget):
        result = algo.train()
    runners = result["env_runners"]
    assert len(kills) == 20
    assert runners["num_env_runner_restarts"] == 20
    assert len(CountRecreated.recreated) == 20
    assert runners["num_healthy_env_runners"] == 2
    assert runners["episode_return_mean"] >= 400, runners


def test_failing_sub_envs_are_rebuilt_and_broken_episodes_never_trained(ray_session, algo_factory):
    """An env raising on ~1% of steps: every trained chunk is an exact, gapless piece of one episode."""
    config = (small_ppo(RecordingPPOConfig).environment(CountingEnv, env_config={"failure_rate": 0.01})
              .env_runners(num_env_runners=1, num_envs_per_env_runner=4, num_cpus_per_env_runner=0.5)
              .training(**SMALL_BATCH).fault_tolerance(restart_failed_sub_environments=True)
              .debugging(seed=0))
    algo = algo_factory(config)
    for _ in range(6):
        result = algo.train()
    assert result["env_runners"]["num_sub_env_restarts_lifetime"] >= 20  # ~60 expected in 6000 steps
    chunks: dict[str, list[tuple[int, int]]] = {}
    for episode_id, t_started, counters in algo.learner_group.local_learner.seen:
        n = len(counters) - 1
        # The step counter runs t_started, t_started+1, ...: no step missing, repeated or faked.
        np.testing.assert_array_equal(counters, t_started + np.arange(n + 1))
        chunks.setdefault(episode_id, []).append((t_started, n))
    for parts in chunks.values():  # an episode's chunks follow each other without gap or overlap
        parts.sort()
        assert parts[0][0] == 0
        assert all(t1 == t0 + n for (t0, n), (t1, _) in zip(parts, parts[1:], strict=False))
    assert 20 <= result["env_runners"]["episode_len_mean"] <= 60  # only whole, clean episodes


def test_a_rebuilt_sub_envs_made_up_last_observation_never_reaches_the_filter():
    """A failed step ends its episode with the space's sample as the last observation; the chunk
    is dropped, and the observation must not move MeanStdFilter's statistics (it did: on a Box
    with wide bounds, one failure could put values near 1e38 into every runner's filter)."""
    config = (small_ppo().environment(CountingEnv, env_config={"failure_rate": 0.02})
              .env_runners(num_envs_per_env_runner=2,
                           env_to_module_connector=lambda env: MeanStdFilter())
              .fault_tolerance(restart_failed_sub_environments=True).debugging(seed=0))
    runner = SingleAgentEnvRunner(config)
    ended = sum(episode.is_done for episode in runner.sample(num_timesteps=600))
    assert runner._num_sub_env_restarts >= 2
    # The observations seen: 2 resets, 300 steps of 2 sub-envs, the ended episodes' last ones.
    assert runner.env_to_module.connectors[0].running_stats.n == 2 + 600 + ended
    runner.stop()


@pytest.mark.parametrize("num_env_runners", [0, 1])
def test_without_sub_env_restarts_the_env_error_surfaces_with_its_traceback(
        num_env_runners, ray_session, algo_factory):
    config = (small_ppo().environment(CountingEnv, env_config={"failure_rate": 0.05})
              .env_runners(num_env_runners=num_env_runners, num_cpus_per_env_runner=0.5)
              .training(**SMALL_BATCH))
    algo = algo_factory(config)
    with pytest.raises(RuntimeError) as err:
        algo.train()
    text = "".join(traceback.format_exception(err.value))
    assert "CountingEnv crashed" in text and "fault_envs.py" in text  # the env's own traceback
    assert "restart_failed_sub_environments=True" in text  # and how to make the run go on


def test_without_restarts_training_goes_on_with_the_healthy_runners(ray_session, algo_factory):
    config = (small_ppo().environment("CartPole-v1")
              .env_runners(num_env_runners=2, num_cpus_per_env_runner=0.5).training(**SMALL_BATCH)
              .fault_tolerance(restart_failed_env_runners=False, ignore_env_runner_failures=True))
    algo = algo_factory(config)
    algo.train()
    os.kill(actor_pids("ray::SingleAgentEnvRunner")[0], signal.SIGKILL)
    for _ in range(3):
        result = algo.train()
    assert result["env_runners"]["num_healthy_env_runners"] == 1
    assert result["env_runners"]["num_env_runner_failures"] == 1
    assert result["env_runners"]["num_env_runner_restarts"] == 0
    assert result["env_runners"]["num_env_steps_sampled"] >= 1000  # the healthy one sampled it all


def test_without_restarts_or_ignoring_a_runner_failure_is_a_clear_error(ray_session, algo_factory):
    config = (small_ppo().environment("CartPole-v1")
              .env_runners(num_env_runners=2, num_cpus_per_env_runner=0.5).training(**SMALL_BATCH)
              .fault_tolerance(restart_failed_env_runners=False))
    algo = algo_factory(config)
    algo.train()
    os.kill(actor_pids("ray::SingleAgentEnvRunner")[0], signal.SIGKILL)
    with pytest.raises(EnvRunnerFailure, match="ignore_env_runner_failures=True"):
        for _ in range(3):
            algo.train()


def _health(**fault_tolerance) -> EnvRunnerHealth:
    """The health of one runner whose actor answers nothing (its probes are never waited on)."""
    actor = SimpleNamespace(ping=SimpleNamespace(remote=lambda: None))
    return EnvRunnerHealth(small_ppo().fault_tolerance(**fault_tolerance), [actor], None)


def test_a_lost_runner_names_the_setting_that_would_have_kept_it():
    no_restarts = _health(restart_failed_env_runners=False, ignore_env_runner_failures=True)
    no_restarts.give_up_on(0, RuntimeError("killed"))  # ignored: train() goes on, if it can
    with pytest.raises(EnvRunnerFailure, match=r"No healthy EnvRunner is left to sample from; "
                       r"EnvRunner 1: restart_failed_env_runners is False: set config\."
                       r"fault_tolerance\(restart_failed_env_runners=True\)"):
        no_restarts.healthy_indices()
    budget = _health(max_num_env_runner_restarts=1)
    with pytest.raises(EnvRunnerFailure, match=r"EnvRunner 1 failed \(RuntimeError: killed\) and "
                       r"is lost: it did not come back within env_runner_health_probe_timeout_s="):
        budget.give_up_on(0, RuntimeError("killed"))
    budget.note_pid(0, 100)
    budget.note_pid(0, 101)  # Ray restarted it once: its budget
    assert budget.num_restarts == 1
    with pytest.raises(EnvRunnerFailure, match=r"EnvRunner 1 failed \(RuntimeError: killed again\) "
                       r"and is lost: its max_num_env_runner_restarts=1 restarts are used up: raise "
                       r"it in config\.fault_tolerance\(\)\. Or set .*ignore_env_runner_failures"):
        budget.give_up_on(0, RuntimeError("killed again"))


def test_a_hung_runner_is_ended_after_sample_timeout_s_and_restarted(tmp_path, ray_session,
                                                                     algo_factory):
    """The first runner process hangs in step(); after sample_timeout_s it is killed and restarted,
    its share of the batch is sampled again, and the iteration completes."""
    config = (small_ppo().environment(CountingEnv, env_config={"hang_marker": str(tmp_path / "hung")})
              .env_runners(num_env_runners=1, num_cpus_per_env_runner=0.5, sample_timeout_s=3)
              .training(**SMALL_BATCH).fault_tolerance(**SLOW_RESTARTS))
    algo = algo_factory(config)
    start = time.perf_counter()
    result = algo.train()
    assert (tmp_path / "hung").exists()  # the hang really happened
    assert result["env_runners"]["num_env_runner_failures"] == 1
    assert result["env_runners"]["num_env_runner_restarts"] == 1
    assert result["env_runners"]["num_env_steps_sampled"] >= 1000
    assert time.perf_counter() - start < 180  # the hang lasts an hour


def test_a_dead_learner_is_a_clear_error(ray_session, algo_factory):
    config = (small_ppo().environment("CartPole-v1").training(**SMALL_BATCH)
              .learners(num_learners=2, num_cpus_per_learner=0.5))
    algo = algo_factory(config)
    algo.train()
    os.kill(actor_pids("ray::PPOLearner")[0], signal.SIGKILL)
    with pytest.raises(LearnerFailure, match="Learners are not restarted"):
        algo.train()
