"""The time_to_return checker (lesson 11) accepts right answers and names the typical mistakes."""

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


@pytest.mark.parametrize("wrong", [last_row_at_target, strictly_above, nan_counts_as_reached,
                                   steps_and_seconds_swapped, final_row_when_never_reached,
                                   index_instead_of_steps, sorts_the_rows])
def test_a_typical_mistake_is_named(wrong):
    with pytest.raises(ExerciseError):
        check_time_to_return(wrong)


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
