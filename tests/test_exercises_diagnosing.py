"""The run-diagnosis checker (lesson 11) accepts the right names and rejects plausible misreadings
with a hint about the metric that tells the bugs apart, without naming the right bug.

The runs here are small tables shaped like the lesson's (the columns `record` writes, values like
those its runs showed), so the test trains nothing.

Review, what answer would still pass that should not? Any dict with the three right names, however
it was reached: names typed after reading the solution, or found by trying names until the hints
stop (six bugs, three runs: the hints make trial and error quick). The checker checks the names,
not the reasoning; the lesson's concept checks ask for the reasoning.
"""

import numpy as np
import pandas as pd
import pytest

from rlcourse.course.diagnosing import BUGS, METRICS, MYSTERY, START_VALUE, STEPS
from rlcourse.course.exercises import ExerciseError, check_diagnosis

pytestmark = pytest.mark.timeout(60)

# Per run: its late values (last half) of what the checker's hints read.
SHAPES = {
    "reward_scale_too_large": {"return": 9400.0, "episode_len": 94.0, "entropy": 0.54, "kl": 0.01,
                               "vf_loss": 1000.0, "vf_loss_unclipped": 2.2e6,
                               "vf_explained_var": 0.0, START_VALUE: 0.0, "batch": 1000},
    "no_bootstrap_at_truncation": {"return": 82.0, "episode_len": 82.0, "entropy": 0.54,
                                   "kl": 0.01, "vf_loss": 93.0, "vf_loss_unclipped": 103.0,
                                   "vf_explained_var": 0.43, START_VALUE: 49.0, "batch": 1000},
    "too_few_env_steps_per_update": {"return": 121.0, "episode_len": 121.0, "entropy": 0.09,
                                     "kl": 0.12, "vf_loss": 45.0, "vf_loss_unclipped": 110.0,
                                     "vf_explained_var": 0.85, START_VALUE: 80.0, "batch": 64},
}


def fake_run(shape: dict, iterations: int = 10) -> pd.DataFrame:
    rising = np.linspace(0.5, 1.0, iterations)
    run = {STEPS: np.arange(1, iterations + 1) * shape["batch"],
           "env_runners/num_env_steps_sampled": np.full(iterations, shape["batch"])}
    for metric, value in shape.items():
        if metric != "batch":
            run[METRICS[metric][0] if metric in METRICS else metric] = value * rising
    return pd.DataFrame(run)


RUNS = {name: fake_run(SHAPES[bug]) for name, bug in MYSTERY.items()}


def answering(answer):
    return lambda runs: answer


def test_the_right_names_pass(capsys):
    assert check_diagnosis(answering(dict(MYSTERY)), RUNS) == MYSTERY
    assert "Correct" in capsys.readouterr().out


WRONG = {
    # A clipped value loss also pins vf_loss at the clip: the return per step tells them apart.
    "scaled rewards read as a clipped value loss": (
        {**MYSTERY, "A": "value_loss_clipped"}, "per step"),
    # Both leave the critic poor: the time limit in the episode length and V(s_0) tell.
    "missing bootstrap read as a clipped value loss": (
        {**MYSTERY, "B": "value_loss_clipped"}, "time limit"),
    "missing bootstrap read as unnormalized observations": (
        {**MYSTERY, "B": "unnormalized_observations"}, "values the start states"),
    # Both move the policy far: a small batch does not collapse the entropy to 0.
    "small batch read as a too-high lr": ({**MYSTERY, "C": "lr_too_high"}, "env steps"),
    "two runs swapped": ({**MYSTERY, "A": MYSTERY["C"], "C": MYSTERY["A"]}, "per step"),
    "a run called healthy": ({**MYSTERY, "B": "healthy"}, "none of them is healthy"),
    "a misspelt bug": ({**MYSTERY, "A": "reward_scale"}, "is not one of the bugs"),
    "a run left out": ({"A": MYSTERY["A"], "B": MYSTERY["B"]}, "name each of"),
}


@pytest.mark.parametrize("what", sorted(WRONG))
def test_plausible_misreadings_are_rejected_with_a_hint(what):
    answer, hint = WRONG[what]
    with pytest.raises(ExerciseError, match=hint) as error:
        check_diagnosis(answering(answer), RUNS)
    wrong = [name for name in sorted(MYSTERY) if answer.get(name) in BUGS
             and answer[name] != MYSTERY[name]]
    if wrong:  # the hint about a run never gives its right name away
        assert f"Run {wrong[0]} is not" in str(error.value)
        assert MYSTERY[wrong[0]] not in str(error.value), str(error.value)


def test_an_answer_that_is_not_a_dict_or_raises_is_rejected():
    with pytest.raises(ExerciseError, match="return a dict"):
        check_diagnosis(answering([MYSTERY[name] for name in sorted(MYSTERY)]), RUNS)

    def broken(runs):
        return {name: runs[name]["no such column"] for name in runs}

    with pytest.raises(ExerciseError, match="KeyError"):
        check_diagnosis(broken, RUNS)


def test_two_bugs_for_a_run_are_refused_and_changing_the_runs_changes_nothing():
    unsure = {**MYSTERY, "B": [MYSTERY["B"], "value_loss_clipped"]}
    with pytest.raises(ExerciseError, match="Run B: .* is not one of the bugs.*as a string"):
        check_diagnosis(answering(unsure), RUNS)

    def empties_the_runs(runs):
        for run in runs.values():
            run.drop(columns=list(run.columns), inplace=True)
        return {**MYSTERY, "A": "value_loss_clipped"}

    before = {name: run.copy() for name, run in RUNS.items()}
    with pytest.raises(ExerciseError, match="per step"):  # the hint reads the run, still whole
        check_diagnosis(empties_the_runs, RUNS)
    for name, run in RUNS.items():
        pd.testing.assert_frame_equal(run, before[name])


def test_the_untouched_stub_is_not_attempted_and_the_lesson_goes_on(capsys):
    def diagnose(runs):
        raise NotImplementedError("TODO: name each run's bug")

    assert check_diagnosis(diagnose, RUNS) == MYSTERY
    assert "Not attempted yet" in capsys.readouterr().out


def test_every_hint_reads_its_run():
    """Each bug's tell formats with a run's numbers (a missing column would break the hint)."""
    from rlcourse.course.exercises.diagnosis import TELLS, WOULD_SHOW
    assert set(TELLS) == set(WOULD_SHOW) == set(BUGS)
    for bug, tell in TELLS.items():
        assert bug not in tell(fake_run(SHAPES["no_bootstrap_at_truncation"])), bug
