"""Evaluation (local, on its own runners, in parallel with training) and the callback hooks."""

import sys
import time

import fault_envs
import pytest
import ray.cloudpickle
from fault_envs import CountingEnv
from helpers import small_ppo

from rlcourse.algorithms.ppo.ppo import PPOConfig
from rlcourse.algorithms.ppo.ppo_learner import PPOLearner
from rlcourse.callbacks.callbacks import Callbacks

pytestmark = pytest.mark.timeout(300)
ray.cloudpickle.register_pickle_by_value(fault_envs)
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

SMALL = {"train_batch_size_per_learner": 500, "minibatch_size": 250, "num_epochs": 1}


class Hooks(Callbacks):
    """Records what each hook saw (the runner is local, so its hooks run in this process too)."""

    def __init__(self):
        self.episode_ends, self.evaluations, self.results = 0, [], []

    def on_episode_end(self, *, episode, env_runner, env_index, **kwargs):
        assert episode.is_done
        self.episode_ends += 1

    def on_evaluate_end(self, *, algorithm, evaluation_metrics, **kwargs):
        self.evaluations.append(evaluation_metrics)

    def on_train_result(self, *, algorithm, result, **kwargs):
        result["custom_metric"] = algorithm.iteration * 10
        self.results.append(result)


def test_evaluation_runs_every_interval_greedily_and_hooks_see_it(algo_factory):
    config = (small_ppo().environment(CountingEnv).training(**SMALL).callbacks(Hooks)
              .evaluation(evaluation_interval=2, evaluation_duration=4))
    algo = algo_factory(config)
    results = [algo.train() for _ in range(4)]
    assert ["evaluation" in r for r in results] == [False, True, False, True]
    evaluation = results[1]["evaluation"]["env_runners"]
    assert evaluation["num_episodes"] == 4
    assert 20 <= evaluation["episode_return_mean"] <= 60  # CountingEnv: return = episode length
    assert algo.eval_env_runner_group.local_env_runner.config.explore is False  # greedy by default
    hooks = algo.callbacks
    assert [r["custom_metric"] for r in results] == [10, 20, 30, 40]  # on_train_result edits results
    assert len(hooks.evaluations) == 2
    runner_hooks = algo.env_runner_group.local_env_runner.callbacks
    assert runner_hooks.episode_ends == results[-1]["env_runners"]["num_episodes_lifetime"] > 0


def test_evaluation_by_timesteps_on_its_own_runner_actor(ray_session, algo_factory):
    config = (small_ppo().environment("CartPole-v1").training(**SMALL)
              .evaluation(evaluation_interval=1, evaluation_duration=600,
                          evaluation_duration_unit="timesteps", evaluation_num_env_runners=1,
                          evaluation_config={"explore": False, "num_envs_per_env_runner": 2})
              .env_runners(num_cpus_per_env_runner=0.5))
    algo = algo_factory(config)
    evaluation = algo.train()["evaluation"]
    assert evaluation["env_runners"]["num_env_steps_sampled"] >= 600
    assert evaluation["num_healthy_env_runners"] == 1
    assert algo.eval_env_runner_group.num_remote_env_runners == 1
    assert algo.eval_env_runner_group.foreach_env_runner(lambda r: (r.num_envs, r.config.explore)) \
        == [(2, False)]


class SlowPPOLearner(PPOLearner):
    spans: list[tuple[float, float]] = []  # (start, end) wall-clock time of each update

    def update(self, episodes, num_minibatches=None):
        start = time.time()
        time.sleep(1.0)
        results = super().update(episodes, num_minibatches)
        self.spans.append((start, time.time()))
        return results


class SlowPPOConfig(PPOConfig):
    def get_default_learner_class(self) -> type:
        return SlowPPOLearner


class StepClock(Callbacks):
    """Logs the wall-clock time of a runner's last env step and the earliest of its last 100."""

    def on_episode_step(self, *, metrics_logger, **kwargs):
        now = time.time()
        metrics_logger.log_value("first_step_time", now, reduce="min", window=100)
        metrics_logger.log_value("last_step_time", now, reduce="max", window=1)


def test_parallel_evaluation_overlaps_training(ray_session, algo_factory):
    """A 1 s update and a ~1 s evaluation (slow eval env) run at the same time, not one after the
    other: the evaluation runner steps while the learner updates (timestamps, not a time bound)."""
    config = (small_ppo(SlowPPOConfig).environment(CountingEnv).training(**SMALL).callbacks(StepClock)
              .evaluation(evaluation_interval=1, evaluation_duration=100,
                          evaluation_duration_unit="timesteps", evaluation_num_env_runners=1,
                          evaluation_parallel_to_training=True,
                          evaluation_config={"explore": False, "env_config": {"step_delay": 0.01}})
              .env_runners(num_cpus_per_env_runner=0.5))
    SlowPPOLearner.spans.clear()
    algo = algo_factory(config)
    algo.train()  # warm-up
    result = algo.train()
    evaluation = result["evaluation"]
    assert evaluation["evaluation_time_s"] >= 0.9 and len(SlowPPOLearner.spans) == 2
    update_start, update_end = SlowPPOLearner.spans[-1]
    eval_start, eval_end = (evaluation["env_runners"][k] for k in ("first_step_time", "last_step_time"))
    assert eval_end - eval_start >= 0.5  # 100 steps of 0.01 s
    assert eval_start < update_end and update_start < eval_end, (
        f"evaluation stepped {eval_start:.2f}..{eval_end:.2f}, the update ran {update_start:.2f}.."
        f"{update_end:.2f}: one after the other, not in parallel")
