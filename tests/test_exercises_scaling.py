"""The scaling checkers accept right answers and name the typical mistakes."""

import pytest

from rlcourse.course.exercises import (
    ExerciseError,
    check_scaling_table,
    check_vectorize_prediction,
    reference_speedup_and_efficiency,
)

MEASURED = {1: 3100.0, 2: 5900.0, 4: 6100.0}


def table(speedup=lambda t, n: t[n] / t[1], efficiency=lambda s, n: s / n):
    """An answer function; the keyword arguments plant one typical mistake."""

    def speedup_and_efficiency(throughputs):
        speedups = {n: speedup(throughputs, n) for n in throughputs}
        return speedups, {n: efficiency(s, n) for n, s in speedups.items()}

    return speedup_and_efficiency


def test_a_right_scaling_table_passes_and_is_returned(capsys):
    answer = table()
    assert check_scaling_table(answer, MEASURED) is answer
    speedups, efficiencies = answer(MEASURED)
    assert speedups == pytest.approx({1: 1.0, 2: 5900 / 3100, 4: 6100 / 3100})
    assert efficiencies[4] == pytest.approx(6100 / 3100 / 4)
    assert "4 runner(s)" in capsys.readouterr().out  # the fastest count is named
    check_scaling_table(table(speedup=lambda t, n: round(t[n] / t[1], 2)), MEASURED)  # rounding


def typed_from_the_measurement(throughputs):
    """Numbers read off the lesson's printout and typed in: right for one table only."""
    return {1: 1.0, 2: 1.9, 4: 1.97}, {1: 1.0, 2: 0.95, 4: 0.49}


def mutates(throughputs):
    throughputs[1] = throughputs[1]  # e.g. filling in a missing row
    return reference_speedup_and_efficiency(throughputs)


@pytest.mark.parametrize(("answer", "hint"), [
    (table(speedup=lambda t, n: t[1] / t[n]), "upside down"),
    (table(speedup=lambda t, n: t[n] / t[max(k for k in t if k < n)] if n > 1 else 1.0),
     "not with the row before"),
    (table(speedup=lambda t, n: t[n] / 1000), r"throughputs\[N\] / throughputs\[1\]"),
    (table(efficiency=lambda s, n: 100 * s / n), "fractions"),
    (table(efficiency=lambda s, n: n / s), "not runners / speed-up"),
    (table(efficiency=lambda s, n: s), "speed-up / number of runners"),
    (typed_from_the_measurement, "typed-in numbers fail"),
    (mutates, "changed `throughputs` in place"),
    (lambda throughputs: ({1: 1.0}, {1: 1.0}), r"no value for \[2, 4, 8\]"),
    (lambda throughputs: reference_speedup_and_efficiency(throughputs)[0], "Return two dicts"),
    (table(speedup=lambda t, n: t[n] / min(t.values())), "divided by the slowest row"),
    (table(speedup=lambda t, n: max(1.0, t[n] / t[1])), "Do not cap it at 1"),
    (table(efficiency=lambda s, n: min(1.0, s / n) if s >= 1 else 1.0), "speed-up / number of runners"),
    (lambda t: ({n: f"{t[n] / t[1]:.2f}x" for n in t}, reference_speedup_and_efficiency(t)[1]),
     r"speedups\[1\] is a str, '1.00x'.*not formatted"),
    (table(efficiency=lambda s, n: f"{s / n:.0%}"), r"efficiencies\[1\] is a str, '100%'"),
], ids=["upside-down", "row-before", "not-divided-by-one-runner", "percent", "runners-over-speedup",
        "efficiency-is-speedup", "typed-numbers", "mutates-input", "missing-rows", "one-dict",
        "divided-by-the-slowest", "capped-at-one", "efficiency-of-a-slowdown-is-one",
        "formatted-speedups", "formatted-efficiencies"])
def test_scaling_table_rejects_each_mistake_with_its_hint(answer, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_scaling_table(answer, MEASURED)


def test_scaling_table_rejects_dividing_by_the_first_row():
    def first_row(throughputs):
        baseline = next(iter(throughputs.values()))  # right only while the 1-runner row comes first
        speedups = {n: t / baseline for n, t in throughputs.items()}
        return speedups, {n: s / n for n, s in speedups.items()}

    with pytest.raises(ExerciseError, match=r"divided by the first row.*throughputs\[1\]"):
        check_scaling_table(first_row, MEASURED)


def test_a_table_without_one_runner_cannot_be_checked():
    with pytest.raises(ExerciseError, match="1-runner"):
        check_scaling_table(table(), {2: 1.0, 4: 2.0})


def test_the_scaling_stubs_are_not_attempted(capsys):
    def speedup_and_efficiency(throughputs):
        raise NotImplementedError("TODO")

    def predict_steps_per_s(num_envs, step_latency_s, mode):
        raise NotImplementedError("TODO")

    assert check_scaling_table(speedup_and_efficiency, MEASURED) is reference_speedup_and_efficiency
    predict = check_vectorize_prediction(predict_steps_per_s)
    assert predict(4, 0.005, "ASYNC") == pytest.approx(800)
    assert capsys.readouterr().out.count("Not attempted yet") == 2


def predictor(sync=lambda n, s: 1 / s, async_=lambda n, s: n / s):
    def predict_steps_per_s(num_envs, step_latency_s, mode):
        return (sync if mode == "SYNC" else async_)(num_envs, step_latency_s)

    return predict_steps_per_s


def test_a_right_vectorize_prediction_passes(capsys):
    right = predictor()
    assert check_vectorize_prediction(right) is right
    assert "Correct" in capsys.readouterr().out
    check_vectorize_prediction(predictor(async_=lambda n, s: 0.95 * n / s))  # within 10%


@pytest.mark.parametrize(("answer", "hint"), [
    (predictor(sync=lambda n, s: n / s), "one after another"),
    (predictor(sync=lambda n, s: 1 / (n * s)), "count env steps, not vector steps"),
    (predictor(async_=lambda n, s: 1 / s), "own process"),
    (predictor(async_=lambda n, s: 2 * n / s), "one wait of 5 ms"),
    (lambda num_envs, step_latency_s, mode: 200.0 if mode == "SYNC" else 800.0,
     "Compute from the arguments"),
    (lambda num_envs, step_latency_s, mode: print(num_envs / step_latency_s),
     r"predict_steps_per_s\(4, 0.005, 'SYNC'\) is None: nothing was returned"),
    (lambda num_envs, step_latency_s, mode: {"SYNC": 1 / step_latency_s}, "is a dict"),
], ids=["sync-overlaps", "sync-vector-steps", "async-adds-up", "async-wrong", "typed-numbers",
        "prints-instead-of-returning", "returns-a-dict"])
def test_vectorize_prediction_rejects_each_mistake_with_its_hint(answer, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_vectorize_prediction(answer)


@pytest.mark.parametrize("answer", [
    lambda num_envs, step_latency_s, mode: num_envs / step_latency_s if mode == "async"
    else 1 / step_latency_s,  # "async" never equals "ASYNC"
    predictor(sync=lambda n, s: n / s),
], ids=["lower-case-mode", "both-overlap"])
def test_vectorize_prediction_rejects_ignoring_the_mode(answer):
    with pytest.raises(ExerciseError, match="for SYNC and for ASYNC: does it read `mode`"):
        check_vectorize_prediction(answer)
