"""Exercise of lesson 15 (graduating to RLlib): when did a run first reach a return?

The learner writes `time_to_return(rows, target)`: `rows` holds one row per training iteration,
(env steps so far, wall seconds so far, mean return), as `side_by_side.run` records them; the answer
is (env steps, seconds) of the first row whose return is at least `target`, or None if none is.
The lesson's wall-time ratio between rlcourse and RLlib is computed with it. The checker builds its
own runs, each with a trap: NaN returns before any episode ends, a return that reaches the target
and falls back, a return just below the target and then one exactly at it, a target never
reached, and a single row. Random values in
every case, so an answer typed from a printout fails; the target is never the lesson's (200 or 150).
Each typical mistake is named.

Review, what answer would still pass that should not? A list [steps, seconds] instead of a tuple
(the lesson only indexes it), and seconds returned as an int when they happen to be whole.
"""

from collections.abc import Callable, Iterator

import numpy as np

from rlcourse.course.exercises.common import ExerciseError, call, exercise, narrowed, passed
from rlcourse.course.side_by_side import first_reaching

__all__ = ["check_time_to_return", "reference_time_to_return"]

Answer = tuple[int, float] | None


def reference_time_to_return(rows: np.ndarray, target: float) -> Answer:
    """rlcourse's answer (`rlcourse.course.side_by_side.first_reaching`)."""
    return first_reaching(np.asarray(rows, dtype=float), target)


def _run(rng: np.random.Generator, returns: list[float]) -> np.ndarray:
    """Rows for `returns`: env steps rising by a random batch size, seconds by random amounts."""
    n = len(returns)
    steps = np.cumsum(np.full(n, int(rng.integers(500, 4000))))
    seconds = np.cumsum(rng.uniform(0.1, 2.0, n))
    return np.column_stack([steps, seconds, returns]).astype(float)


def checker_cases(seed: int = 0) -> list[tuple[str, np.ndarray, float]]:
    """(what the case tests, rows, target), values drawn anew from `seed`."""
    rng = np.random.default_rng(seed)
    target = float(rng.integers(100, 300))
    rising = list(np.linspace(20, target * 1.5, 12) + rng.normal(0, 1, 12))
    nan_first = [np.nan, np.nan, *rising]
    fell_back = [20.0, 60.0, target + 5, target - 30, target + 60, target + 40]
    exact = [10.0, target / 2, target - 0.5, target, target + 1]
    never = list(np.linspace(10, target - 1, 8))
    return [("a steady rise", _run(rng, rising), target),
            ("NaN returns before the first episode ends", _run(rng, nan_first), target),
            ("a return that reached the target, then fell back", _run(rng, fell_back), target),
            ("a return just below the target, then exactly at it", _run(rng, exact), target),
            ("a target never reached", _run(rng, never), target),
            ("a single row", _run(rng, [target + 1]), target)]


LESSON_TARGETS = (200.0, 150.0)  # the lesson's TARGET and IMPALA_TARGET


def _same(answer: Answer, expected: Answer) -> bool:
    if expected is None or answer is None:
        return answer is expected
    try:
        return (len(answer) == 2 and float(answer[0]) == float(expected[0])
                and bool(np.isclose(float(answer[1]), float(expected[1]))))
    except (TypeError, ValueError):
        return False


def _row(rows: np.ndarray, i: int) -> tuple[int, float]:
    return int(rows[i, 0]), float(rows[i, 1])


def _mistakes(rows: np.ndarray, target: float) -> list[tuple[Answer, str]]:
    """What each typical mistake answers on `rows`, and the hint that names it."""
    returns = rows[:, 2]
    reached = np.flatnonzero(returns >= target)
    first = reference_time_to_return(rows, target)
    above = np.flatnonzero(returns > target)
    nan_too = np.flatnonzero(~(returns < target))
    mistakes = [
        (_row(rows, reached[-1]) if len(reached) else None, "take the first row at the target, "
         "not the last one: the run may fall back below it and reach it again"),
        (_row(rows, above[0]) if len(above) else None, "'at least the target' is >=, not >: a "
         "return exactly at the target counts"),
        (_row(rows, nan_too[0]) if len(nan_too) else None, "a NaN return (no episode finished "
         "yet) has reached nothing, but `not value < target` is True for NaN: compare with "
         "value >= target"),
        (first and (first[1], first[0]), "return (env steps, seconds), in that order"),
        (first or _row(rows, len(rows) - 1), "return None when no row reaches the target, not "
         "the last row"),
        ((int(reached[0]), float(rows[reached[0], 1])) if len(reached) else None, "return the "
         "row's env steps (its column 0), not its index"),
        (_row(rows, int(np.nanargmax(returns))) if len(reached) else None, "take the first row "
         "at the target, not the row with the best return"),
    ]
    for lesson in LESSON_TARGETS:
        if lesson != target:
            mistakes.append((reference_time_to_return(rows, lesson), f"the target here is "
                             f"{target:g}, not the lesson's {lesson:g}: use the target argument"))
    return mistakes


def _judged() -> Iterator[tuple[tuple, list[tuple[Answer, str]]]]:
    """Each case as `narrowed` reads it: (arguments, each mistake's answer and hint)."""
    for _, rows, target in checker_cases():
        yield (rows.copy(), target), _mistakes(rows, target)


def _below_target(rows: np.ndarray, target: float, answer: Answer) -> list[str]:
    """The hint for an answer that is a row whose return is below the target (no other mistake)."""
    for i in np.flatnonzero(rows[:, 2] < target):
        if _same(answer, _row(rows, i)):
            if not (rows[:, 2] >= target).any():
                return [f"no row reaches the target here, so the answer is None (the row you gave "
                        f"has a return of {rows[i, 2]:g}; np.argmax of an all-False mask is 0)"]
            return [f"the row you gave has a return of {rows[i, 2]:g}, below the target "
                    f"{target:g}: a row counts only when its return is >= the target itself"]
    return []


@exercise("time_to_return", stub="time_to_return", fallback="rlcourse's first_reaching",
          reference=lambda fn: reference_time_to_return)
def check_time_to_return(fn: Callable[[np.ndarray, float], Answer]) -> Callable:
    """Check `fn` on the checker's runs; return it when right (the lesson then uses it)."""
    for what, rows, target in checker_cases():
        readonly = rows.copy()
        readonly.flags.writeable = False
        answer = call(fn, readonly, target, where=what)
        if answer is not None and not isinstance(answer, tuple | list | np.ndarray):
            raise ExerciseError(f"On {what} time_to_return gave a {type(answer).__name__}: return "
                                "a tuple (env steps, seconds), e.g. (int(row[0]), float(row[1])), "
                                "or None.")
        expected = reference_time_to_return(rows, target)
        if not _same(answer, expected):
            hints = [hint for wrong, hint in _mistakes(rows, target)
                     if not _same(wrong, expected) and _same(answer, wrong)]
            if len(hints) > 1:
                hints = narrowed(hints, fn, _judged(), _same)
            hints = hints or _below_target(rows, target, answer)
            raise ExerciseError(
                f"On {what} (target {target:g}) time_to_return gave {answer!r}; expected {expected!r}"
                f" (env steps, seconds). " + (f"Hint: {'; or: '.join(hints)}." if hints else
                "Rows are (env steps, seconds, return): take the first row whose return is at "
                "least the target (NaN is never at least anything), return its env steps and "
                "seconds, and None if no row reaches the target."))
    passed("time_to_return finds the first iteration at the target, and None when there is none.")
    return fn
