"""The time_to_return checker (lesson 15) accepts right answers and names the typical mistakes."""

import numpy as np
import pytest

from rlcourse.course.exercises import ExerciseError, check_time_to_return, reference_time_to_return

pytestmark = pytest.mark.timeout(60)


def last_row_at_target(rows, target):
    reached = np.flatnonzero(rows[:, 2] >= target)
    return (int(rows[reached[-1], 0]), float(rows[reached[-1], 1])) if len(reached) else None


def strictly_above(rows, target):
    for steps, seconds, value in rows:
        if value > target:
            return int(steps), float(seconds)
    return None


def nan_counts_as_reached(rows, target):
    for steps, seconds, value in rows:
        if not value < target:  # NaN is not below the target either
            return int(steps), float(seconds)
    return None


def steps_and_seconds_swapped(rows, target):
    answer = reference_time_to_return(rows, target)
    return answer and (answer[1], answer[0])


def final_row_when_never_reached(rows, target):
    return reference_time_to_return(rows, target) or (int(rows[-1, 0]), float(rows[-1, 1]))


def index_instead_of_steps(rows, target):
    reached = np.flatnonzero(np.nan_to_num(rows[:, 2], nan=-np.inf) >= target)
    return (int(reached[0]), float(rows[reached[0], 1])) if len(reached) else None


def sorts_the_rows(rows, target):
    rows[:] = rows[np.argsort(rows[:, 2])]  # in place: the checker's rows are read-only
    return None


def best_row(rows, target):
    returns = np.nan_to_num(rows[:, 2], nan=-np.inf)
    i = int(np.argmax(returns))
    return (int(rows[i, 0]), float(rows[i, 1])) if returns[i] >= target else None


def lessons_target(rows, target):
    return reference_time_to_return(rows, 200.0)  # the lesson's TARGET, not the argument


def argmax_unguarded(rows, target):
    i = int(np.argmax(np.nan_to_num(rows[:, 2], nan=-np.inf) >= target))  # 0 when none reaches it
    return int(rows[i, 0]), float(rows[i, 1])


def as_a_dict(rows, target):
    answer = reference_time_to_return(rows, target)
    return answer and {"steps": answer[0], "seconds": answer[1]}


def as_a_series(rows, target):
    import pandas as pd
    df = pd.DataFrame(rows, columns=["steps", "seconds", "return"])
    return df.loc[df["return"] >= target, ["steps", "seconds"]].iloc[0]  # IndexError: never


def within_one_of_the_target(rows, target):
    for steps, seconds, value in rows:
        if value >= target - 1:  # "close enough"
            return int(steps), float(seconds)
    return None


@pytest.mark.parametrize(("wrong", "hint"), [
    (last_row_at_target, "first row at the target, not the last one"),
    (strictly_above, "is >=, not >"),
    (nan_counts_as_reached, "True for NaN"),
    (steps_and_seconds_swapped, r"\(env steps, seconds\), in that order"),
    (final_row_when_never_reached, "return None when no row reaches"),
    (index_instead_of_steps, "not its index"),
    (sorts_the_rows, "in place"),
    (best_row, "not the row with the best return"),
    (lessons_target, "use the target argument"),
    (within_one_of_the_target, r"a return of [\d.]+, below the target [\d.]+: a row counts only when"),
    (argmax_unguarded, "no row reaches the target here, so the answer is None"),
    (as_a_dict, "gave a dict: return a tuple"),
    (as_a_series, "gave a Series: return a tuple"),
], ids=["last-row", "strictly-above", "nan-reached", "swapped", "final-row", "index", "sorts",
        "best-row", "lessons-target", "within-one", "argmax-unguarded", "dict", "series"])
def test_a_typical_mistake_is_named(wrong, hint):
    """Each gets its own hint, and only it: where two mistakes give the same answer on the failing
    case, the learner's answers on the other cases tell which one the code makes."""
    with pytest.raises(ExerciseError, match=hint) as wrong_answer:
        check_time_to_return(wrong)
    assert "; or: " not in str(wrong_answer.value)


def test_right_answers_pass(capsys):
    def loop(rows, target):
        for steps, seconds, value in rows:
            if value >= target:
                return int(steps), float(seconds)
        return None

    assert check_time_to_return(loop) is loop
    assert check_time_to_return(reference_time_to_return) is reference_time_to_return
    assert "Correct" in capsys.readouterr().out


def test_the_stub_is_not_attempted_and_the_lesson_goes_on(capsys):
    def time_to_return(rows, target):
        raise NotImplementedError("TODO")

    fallback = check_time_to_return(time_to_return)
    assert fallback is reference_time_to_return
    assert "Not attempted yet" in capsys.readouterr().out
