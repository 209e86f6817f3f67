"""Callbacks with RLlib's hooks, and custom metrics logged on runners and reduced across them.

The truth the hooks are checked against: every chunk a runner returns, joined into whole episodes
by id. Fragments are short, so most episodes span several sample() calls."""

import sys
from collections import defaultdict

import fault_envs
import numpy as np
import pytest
import ray.cloudpickle
from fault_envs import CountingEnv
from helpers import small_impala, small_ppo

from rlcourse.algorithms.dqn.dqn import DQN, DQNConfig
from rlcourse.callbacks.callbacks import Callbacks
from rlcourse.connectors.env_to_module import MeanStdFilter
from rlcourse.core.rl_module.rl_module import build_module
from rlcourse.env.single_agent_env_runner import SingleAgentEnvRunner
from rlcourse.utils.metrics.metrics_logger import EpisodeStats, MetricsLogger
from rlcourse.utils.validation import ConfigError

pytestmark = pytest.mark.timeout(300)
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
ray.cloudpickle.register_pickle_by_value(fault_envs)

SMALL = {"train_batch_size_per_learner": 400, "minibatch_size": 200, "num_epochs": 1}


class EpisodeRecorder(Callbacks):
    """Collects each episode's rewards and largest |pole angle| step by step in custom_data, and
    logs per-episode metrics reduced three ways."""

    def __init__(self):
        self.ended, self.samples, self.starts = [], [], 0

    def on_episode_start(self, *, episode, env_index, **kwargs):
        self.starts += 1
        episode.custom_data.update(rewards=[], max_angle=abs(float(episode.get_observations(0)[2])),
                                   env_index=env_index, first=episode.get_observations(0).tolist())

    def on_episode_step(self, *, episode, env_index, **kwargs):
        assert episode.custom_data["env_index"] == env_index
        assert episode.get_observations(0).tolist() == episode.custom_data["first"]  # not reused
        assert episode.get_actions(-1) in (0, 1)  # the module's action, as the chunks keep it
        episode.custom_data["rewards"].append(float(episode.get_rewards(-1)))
        angle = abs(float(episode.get_observations(-1)[2]))
        episode.custom_data["max_angle"] = max(episode.custom_data["max_angle"], angle)
        assert len(episode.custom_data["rewards"]) == episode.t

    def on_episode_end(self, *, episode, metrics_logger, **kwargs):
        self.ended.append(episode)
        metrics_logger.log_value("max_pole_angle", episode.custom_data["max_angle"])
        metrics_logger.log_value("longest_episode", len(episode.custom_data["rewards"]),
                                 reduce="max")
        metrics_logger.log_value("episodes_counted", 1, reduce="sum")

    def on_sample_end(self, *, samples, **kwargs):
        self.samples.append(len(samples))


def _config(**env_runners):
    return (small_ppo().environment("CartPole-v1").training(**SMALL).debugging(seed=0)
            .callbacks(EpisodeRecorder)
            .env_runners(rollout_fragment_length=25, num_envs_per_env_runner=3, **env_runners))


@pytest.mark.parametrize("connector", [None, lambda env: MeanStdFilter()], ids=["raw", "filtered"])
def test_episode_hooks_see_every_step_of_episodes_that_span_samples(connector):
    """Filtered: the hooks see the observations the episodes hold (the last one was raw)."""
    config = _config(env_to_module_connector=connector)
    runner = SingleAgentEnvRunner(config, config.get_env_creator())
    module = build_module(config, runner.observation_space, runner.action_space)
    runner.set_weights(module.get_state(inference_only=True))
    chunks = defaultdict(list)
    for _ in range(12):
        for chunk in runner.sample():
            chunks[chunk.id_].append(chunk)
    hooks = runner.callbacks
    assert len(hooks.samples) == 12 and min(hooks.samples) >= 3  # a chunk per sub-env at least
    finished = {c.id_: c for c in hooks.ended}
    assert len(finished) == len(hooks.ended) >= 5  # each episode ends once
    spanning = 0
    for id_, parts in chunks.items():
        whole = parts[0]
        for part in parts[1:]:
            whole = whole.concat_episode(part)
        if id_ not in finished:
            assert not whole.is_done
            continue
        spanning += len(parts) > 1
        data = finished[id_].custom_data
        np.testing.assert_array_equal(data["rewards"], whole.rewards)
        assert data["first"] == whole.observations[0].tolist()
        assert data["max_angle"] == pytest.approx(float(np.abs(whole.observations[:, 2]).max()))
    assert spanning >= 3  # the hooks followed episodes across sample() calls
    # Episodes started: the finished ones, plus one running in each of the 3 sub-envs.
    assert hooks.starts == len(finished) + 3
    logged = runner.get_metrics()["custom_metrics"]
    assert logged["episodes_counted"]["values"] == [len(finished)]  # a sum travels as one number
    assert logged["longest_episode"]["values"] == [max(len(c.custom_data["rewards"])
                                                       for c in hooks.ended)]


class StepCounter(Callbacks):
    """Counts an episode's steps in custom_data; CountingEnv's observation[0] counts them too."""

    def __init__(self):
        self.ended = 0

    def on_episode_start(self, *, episode, **kwargs):
        episode.custom_data["steps"] = 0

    def on_episode_step(self, *, episode, **kwargs):
        episode.custom_data["steps"] += 1

    def on_episode_end(self, *, episode, metrics_logger, **kwargs):
        assert episode.custom_data["steps"] == episode.t == episode.observations[-1][0]
        self.ended += 1
        metrics_logger.log_value("hook_episodes", 1, reduce="sum")


def test_a_broken_episode_takes_its_custom_data_with_it(algo_factory):
    """Sub-envs that crash are rebuilt and their episode dropped: the next episode's hooks must not
    get the dropped one's custom_data."""
    algo = algo_factory(
        small_ppo().environment(CountingEnv, env_config={"failure_rate": 0.02})
        .training(**SMALL).callbacks(StepCounter)
        .env_runners(num_envs_per_env_runner=4, rollout_fragment_length=25)
        .fault_tolerance(restart_failed_sub_environments=True))
    results = [algo.train()["env_runners"] for _ in range(3)]
    assert results[-1]["num_sub_env_restarts_lifetime"] >= 3
    assert results[-1]["hook_episodes"] == results[-1]["num_episodes_lifetime"] >= 10
    assert algo.env_runner_group.local_env_runner.callbacks.ended == results[-1]["hook_episodes"]


def test_custom_metrics_from_remote_runners_are_reduced_across_them(ray_session, algo_factory):
    algo = algo_factory(_config(num_env_runners=2, num_cpus_per_env_runner=0.5)
                        .evaluation(evaluation_interval=2, evaluation_duration=4))
    results = [algo.train() for _ in range(4)]
    assert algo.env_runner_group.num_remote_env_runners == 2
    total = 0
    for result in results:
        runners = result["env_runners"]
        total += runners["num_episodes"]
        # Each runner counted its own episodes; the sum over both is every episode of the run.
        assert runners["episodes_counted"] == total == runners["num_episodes_lifetime"]
        assert 0 < runners["max_pole_angle"] < 0.3  # CartPole ends an episode past 0.2095 rad
        assert 8 <= runners["longest_episode"] <= 500
    # Evaluation runners log the same metrics, under result["evaluation"], counted afresh.
    assert "evaluation" not in results[0]
    assert 4 <= results[1]["evaluation"]["env_runners"]["episodes_counted"] < total


class UsesTheBuiltAlgorithm(Callbacks):
    """What on_algorithm_init is for: use the whole algorithm, the subclass's own parts too."""

    def on_algorithm_init(self, *, algorithm, **kwargs):
        self.module = algorithm.get_module("default_policy")  # IMPALA's takes its learner's lock
        if isinstance(algorithm, DQN):
            self.buffered = len(algorithm.replay_buffer)  # built in DQN's setup


@pytest.mark.parametrize("config", [
    small_impala().environment("CartPole-v1"),
    DQNConfig().environment("CartPole-v1").env_runners(num_env_runners=0),
], ids=["IMPALA", "DQN"])
def test_on_algorithm_init_runs_once_the_subclass_is_built(config, algo_factory):
    """It ran inside Algorithm.setup, before IMPALA's learner thread or DQN's replay buffer."""
    algo = algo_factory(config.callbacks(UsesTheBuiltAlgorithm))
    if isinstance(algo, DQN):
        assert algo.callbacks.buffered == 0
    assert algo.callbacks.module.state_dict().keys() == algo.get_module().state_dict().keys()


def test_a_custom_metric_named_like_a_built_in_one_is_refused(algo_factory):
    class Clash(Callbacks):
        def on_episode_end(self, *, metrics_logger, **kwargs):
            metrics_logger.log_value("episode_return_mean", 1.0)

    algo = algo_factory(small_ppo().environment("CartPole-v1").training(**SMALL).callbacks(Clash))
    with pytest.raises(ValueError, match="'episode_return_mean'.*built-in.*another name"):
        algo.train()


def test_a_resumed_run_reports_the_same_custom_metrics(algo_factory, tmp_path):
    """Episodes running at the save carry their custom_data (and steps) into the checkpoint, and
    the metrics' windows and totals go on: the next iteration's results are exactly the same."""
    algo = algo_factory(_config())
    algo.train()
    path = algo.save_to_path(tmp_path / "ckpt")
    expected = algo.train()["env_runners"]
    restored = algo_factory(_config())
    restored.restore_from_path(path)
    assert restored.train()["env_runners"] == expected
    assert expected["episodes_counted"] == expected["num_episodes_lifetime"]


class ResultCounter(Callbacks):
    """Counts train() results; checkpoints keep the count (Callbacks.get_state / set_state)."""

    def __init__(self):
        self.results = 0

    def on_train_result(self, *, result, **kwargs):
        self.results += 1

    def get_state(self):
        return {"results": self.results}

    def set_state(self, state):
        self.results = state["results"]


def test_a_checkpoint_keeps_the_callbacks_state(algo_factory, tmp_path):
    algo = algo_factory(_config().callbacks(ResultCounter))
    algo.train()
    algo.train()
    path = algo.save_to_path(tmp_path / "ckpt")
    restored = algo_factory(_config().callbacks(ResultCounter))
    restored.restore_from_path(path)
    assert restored.callbacks.results == 2
    restored.train()
    assert restored.callbacks.results == 3


class Unsaveable(Callbacks):
    def on_episode_start(self, *, episode, **kwargs):
        episode.custom_data["tracker"] = object()


def test_custom_data_a_checkpoint_cannot_hold_fails_the_save_naming_it(algo_factory, tmp_path):
    algo = algo_factory(small_ppo().environment("CartPole-v1").training(**SMALL)
                        .callbacks(Unsaveable))
    algo.train()
    with pytest.raises(TypeError, match=r"episode.custom_data holds.*keep numbers"):
        algo.save_to_path(tmp_path / "ckpt")
    assert not (tmp_path / "ckpt").exists()


# -- MetricsLogger on its own ----------------------------------------------------------------


def _runner_logged(values: list[float], **how) -> dict:
    logger = MetricsLogger()
    for v in values:
        logger.log_value("x", v, **how)
    return logger.pop_logged()


@pytest.mark.parametrize("how, iterations, expected", [
    ({}, [[1, 2], [3], [5, 7]], [1.5, 3.0, 6.0]),                       # this iteration's mean
    ({"window": 3}, [[1, 2], [3], [5, 7]], [1.5, 2.0, 5.0]),            # last 3 values, any iteration
    ({"reduce": "max"}, [[1, 9], [3], [5, 7]], [9.0, 3.0, 7.0]),
    ({"reduce": "min", "window": 2}, [[4, 9], [3], [5, 7]], [4.0, 3.0, 5.0]),
    ({"reduce": "sum"}, [[1, 2], [3], [5, 7]], [3.0, 6.0, 18.0]),       # a running total
    ({"reduce": "sum", "clear_on_reduce": True}, [[1, 2], [3], [5, 7]], [3.0, 3.0, 12.0]),
])
def test_reductions_over_two_runners(how, iterations, expected):
    driver = MetricsLogger()
    for values, want in zip(iterations, expected, strict=True):
        half = len(values) // 2 or 1
        driver.merge([_runner_logged(values[:half], **how), _runner_logged(values[half:], **how)])
        assert driver.reduce()["x"] == pytest.approx(want)


def test_windows_and_totals_survive_a_checkpoint_and_an_empty_iteration_reports_nothing():
    runner = MetricsLogger()
    for value in (2.0, 4.0):
        runner.log_value("windowed", value, window=10)
    runner.log_value("total", 5.0, reduce="sum")
    runner.log_value("this_iteration", 1.0)
    driver = MetricsLogger()
    driver.merge([runner.pop_logged()])
    assert driver.reduce() == {"windowed": 3.0, "total": 5.0, "this_iteration": 1.0}
    restored = MetricsLogger()
    restored.set_state(driver.get_state())
    restored.merge([runner.pop_logged()])  # nothing new was logged
    assert restored.reduce() == {"windowed": 3.0, "total": 5.0}  # no made-up 0 for the mean


@pytest.mark.parametrize("call, match", [
    (lambda m: m.log_value("x", float("nan")), "one finite number"),
    (lambda m: m.log_value("x", [1, 2]), "one finite number"),
    (lambda m: m.log_value("x", 1, reduce="average"), "reduce must be one of"),
    (lambda m: m.log_value("x", 1, window=0), "window must be a positive int"),
    (lambda m: m.log_value("x", 1, reduce="sum", window=5), "windows belong to mean"),
    (lambda m: m.log_value("x", 1, clear_on_reduce=True), "only reduce='sum'"),
    (lambda m: (m.log_value("x", 1), m.log_value("x", 1, reduce="max")), "log one key one way"),
])
def test_bad_log_values_are_refused_naming_the_key(call, match):
    with pytest.raises(ValueError, match=match):
        call(MetricsLogger())


def test_a_window_too_small_for_one_iteration_keeps_every_runners_latest_values():
    runners = []
    for runner_id in range(2):
        logger = MetricsLogger()
        for step in range(5):
            logger.log_value("x", 10 * runner_id + step, reduce="max", window=4)
        runners.append(logger.pop_logged())
    driver = MetricsLogger()
    driver.merge(runners)
    assert driver.reduce()["x"] == 14.0  # runner 1's latest values survived the window
    assert sorted(driver.get_state()["x"]["values"]) == [3.0, 4.0, 13.0, 14.0]


def test_a_custom_metric_named_like_a_runner_group_result_is_refused():
    stats = EpisodeStats()
    runner = MetricsLogger()
    runner.log_value("num_healthy_env_runners", 1.0)
    with pytest.raises(ValueError, match="'num_healthy_env_runners'.*built-in"):
        stats.add([{"episode_returns": [], "episode_lens": [], "num_env_steps_sampled": 0,
                    "custom_metrics": runner.pop_logged()}])


class MisspelledHook(Callbacks):
    def on_episode_ended(self, *, episode, **kwargs): ...


class RLlibOnlyHook(Callbacks):
    def on_environment_created(self, *, env_runner, env, **kwargs): ...


class OldApiStackHook(Callbacks):
    def on_episode_end(self, *, worker, base_env, policies, episode, **kwargs): ...


class PositionalHook(Callbacks):
    def on_episode_end(self, episode): ...


class NoKwargsHook(Callbacks):
    def on_train_result(self, *, result): ...


class EveryKeywordHooks(Callbacks):  # what the runner passes, named, without **kwargs: it works
    def on_episode_end(self, episode, env_runner, metrics_logger, env, env_index, rl_module): ...

    def on_sample_end(self, *, env_runner, metrics_logger, samples): ...


@pytest.mark.parametrize(("callbacks", "match"), [
    (MisspelledHook, r"MisspelledHook.on_episode_ended is not a hook .*so nothing would call it "
                     r"\(did you mean on_episode_end\?\)\. The hooks are on_algorithm_init, "),
    (RLlibOnlyHook, r"on_environment_created is not a hook \(a typo, or an RLlib hook rlcourse "
                    r"lacks\), so nothing would call it\. The hooks are "),
    (OldApiStackHook, r"missing a required argument: 'worker'\. Hooks take keyword arguments: "
                      r"def on_episode_end\(self, \*, episode, \*\*kwargs\)"),
    (PositionalHook, r"unexpected keyword argument 'env_runner'\. Hooks take keyword arguments: "
                     r"def on_episode_end\(self, \*, episode, \*\*kwargs\)"),
    (NoKwargsHook, r"unexpected keyword argument 'algorithm'\. Hooks take keyword arguments: "
                   r"def on_train_result\(self, \*, result, \*\*kwargs\)")])
def test_hooks_that_nothing_calls_or_that_fail_when_called_are_refused_at_validate(callbacks,
                                                                                   match):
    """Not silently ignored, nor a TypeError at the first episode's end inside a runner."""
    with pytest.raises(ConfigError, match=match) as info:
        small_ppo().environment("CartPole-v1").callbacks(callbacks).validate()
    assert info.value.setting == "callbacks_class"


def test_hooks_that_take_every_keyword_they_are_called_with_pass_validate():
    small_ppo().environment("CartPole-v1").callbacks(EveryKeywordHooks).validate()
