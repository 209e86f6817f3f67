"""Learning, one matrix: each tuned example (tuned_examples/: an algorithm, an env, settings and a
pass mark) trains until its stop values and must reach its pass mark, once in the suite.

Budgets are the examples' own, in env steps (no wall clock: a busy machine is slower, not worse);
speed goals live in benchmarks/. A row may add what it alone shows (EXTRAS) and checks after the
run (CHECKS). Learning that is not a tuned example's (a stop value and a pass mark on one key) has
its test beside the feature: multi-agent CartPole (test_multi_agent_training.py), self-play
(test_self_play.py), learning while runners are killed (test_fault_tolerance.py). Other layouts of
the same run are checked where they differ: data-parallel learners compute the single learner's
update (test_learner_group.py), runner actors sample as a local runner does (test_env_runner.py).
The course's PPO CartPole settings exactly as shipped are trained by lesson 01 (nbval).
"""

import time
from collections.abc import Callable

import pytest

from rlcourse.algorithms.algorithm import Algorithm
from rlcourse.algorithms.algorithm_config import AlgorithmConfig
from rlcourse.connectors.env_to_module import MeanStdFilter
from rlcourse.connectors.env_to_module.mean_std_filter import RunningStat
from rlcourse.course.train_job import format_result
from rlcourse.course.tuned_example import load_tuned_example, reached, result_value
from rlcourse.course.tuned_examples_suite import TUNED_EXAMPLES, find_examples

# Trained beside its feature instead, single-threaded as the lessons train (tests/test_lstm.py):
# torch's threads and the runner in the driver contend on a busy 2-core machine.
ELSEWHERE = {"appo/stateless_cartpole_appo.py"}
EXAMPLES = {name: path for path in find_examples([])
            if (name := path.relative_to(TUNED_EXAMPLES).as_posix()) not in ELSEWHERE
            and not load_tuned_example(path).is_sweep}


def normalized_observations(config: AlgorithmConfig) -> AlgorithmConfig:
    # A lambda travels to the runner actors by value (they cannot import this test module).
    return config.env_runners(env_to_module_connector=lambda env: MeanStdFilter())


# What a row adds to its example's config. The filter rides on PPO CartPole: normalizing CartPole's
# observations left the env steps to 450 about the same (seeds 0-2: 58-72k with it, 62-64k without).
EXTRAS: dict[str, Callable[[AlgorithmConfig], AlgorithmConfig]] = {
    "ppo/cartpole_ppo.py": normalized_observations,
}


def greedy_play_scores(mark: float) -> Callable[[Algorithm, dict], None]:
    def check(algo: Algorithm, result: dict) -> None:
        evaluation = algo.evaluate()["env_runners"]
        assert evaluation["num_episodes"] == algo.config.evaluation_duration
        assert evaluation["episode_return_mean"] >= mark, evaluation

    return check


def filter_saw_every_step(algo: Algorithm, result: dict) -> None:
    stats = RunningStat.from_plain(algo.env_runner_group.env_to_module_state[0]["running_stats"])
    assert stats.n >= result["num_env_steps_sampled_lifetime"]  # every runner's steps merged


def temperature_fell(algo: Algorithm, result: dict) -> None:
    assert result["learners"]["default_policy"]["alpha_value"] < 1.0  # initial_alpha: 1.0


# What a row checks after reaching its mark, beyond the mark.
CHECKS: dict[str, list[Callable[[Algorithm, dict], None]]] = {
    "ppo/cartpole_ppo.py": [filter_saw_every_step, greedy_play_scores(300)],
    "ppo/gridworld_ppo.yaml": [greedy_play_scores(0.6)],  # random play: about -0.9
    "sac/pendulum_sac.py": [temperature_fell],
}


def train_until_stop(algo: Algorithm, stop: dict[str, float]) -> dict:
    """Train until any stop value is reached, as `rlcourse tuned-examples` does; a line per
    iteration, which pytest shows when the test fails."""
    start = time.perf_counter()
    while True:
        result = algo.train()
        print(format_result(result, time.perf_counter() - start), flush=True)
        if any(reached(result, stop).values()):
            return result


def test_every_learning_row_names_a_shipped_example():
    assert set(EXTRAS) | set(CHECKS) <= set(EXAMPLES)


@pytest.mark.learning
@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_tuned_example_reaches_its_pass_mark(name, ray_session, algo_factory):
    example = load_tuned_example(EXAMPLES[name])
    config = EXTRAS.get(name, lambda c: c)(example.config)
    algo = algo_factory(config)
    result = train_until_stop(algo, example.stop)
    assert all(reached(result, example.pass_criteria).values()), {
        key: (result_value(result, key), mark) for key, mark in example.pass_criteria.items()}
    for check in CHECKS.get(name, []):
        check(algo, result)
