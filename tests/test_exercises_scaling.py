"""The scaling checkers accept right answers and name the typical mistakes."""

import pytest

from rlcourse.course.exercises import ExerciseError, check_scaling_table, check_vectorize_prediction

THROUGHPUTS = {1: 4000.0, 2: 7200.0, 4: 7600.0, 8: 7000.0}


def speedups(rule=lambda t, n: t[n] / t[1]):
    return {n: rule(THROUGHPUTS, n) for n in THROUGHPUTS}


def efficiencies(rule=lambda s, n: s / n):
    return {n: rule(s, n) for n, s in speedups().items()}


def test_a_right_scaling_table_passes(capsys):
    check_scaling_table(THROUGHPUTS, speedups(), efficiencies())
    assert "4 runner(s)" in capsys.readouterr().out  # the fastest count is named
    rounded = {n: round(s, 2) for n, s in speedups().items()}  # rounding to 2 places is fine
    check_scaling_table(THROUGHPUTS, rounded, efficiencies())


@pytest.mark.parametrize(("speedup_answer", "efficiency_answer", "hint"), [
    (speedups(lambda t, n: t[1] / t[n]), efficiencies(), "upside down"),
    (speedups(lambda t, n: t[n] / t[max(1, n // 2)]), efficiencies(), "not with the row before"),
    (speedups(lambda t, n: t[n] / 1000), efficiencies(), r"throughputs\[N\] / throughputs\[1\]"),
    (speedups(), efficiencies(lambda s, n: 100 * s / n), "fractions"),
    (speedups(), efficiencies(lambda s, n: n / s), "not runners / speed-up"),
    (speedups(), efficiencies(lambda s, n: s), "speed-up / number of runners"),
    ({1: 1.0, 2: 1.8}, efficiencies(), r"no value for \[4, 8\]"),
])
def test_wrong_scaling_tables_get_a_hint(speedup_answer, efficiency_answer, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_scaling_table(THROUGHPUTS, speedup_answer, efficiency_answer)


def test_a_table_without_one_runner_cannot_be_checked():
    with pytest.raises(ExerciseError, match="1-runner"):
        check_scaling_table({2: 1.0, 4: 2.0}, {2: 1.0, 4: 2.0}, {2: 0.5, 4: 0.5})


def test_a_right_vectorize_prediction_passes(capsys):
    check_vectorize_prediction(num_envs=4, step_latency_s=0.002, sync_steps_per_s=500,
                               async_steps_per_s=2000)
    assert "Correct" in capsys.readouterr().out
    check_vectorize_prediction(num_envs=8, step_latency_s=0.01, sync_steps_per_s=100,
                               async_steps_per_s=790)  # within 10%


@pytest.mark.parametrize(("sync", "async_", "hint"), [
    (2000, 2000, "one after another"),
    (125, 2000, "4 waits of 2 ms"),
    (500, 500, "own process"),
    (500, 4000, "one wait of 2 ms"),
])
def test_wrong_vectorize_predictions_get_a_hint(sync, async_, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_vectorize_prediction(num_envs=4, step_latency_s=0.002, sync_steps_per_s=sync,
                                   async_steps_per_s=async_)
