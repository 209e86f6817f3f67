"""Exercise of lesson 11 (graduating to RLlib): when did a run first reach a return?

The learner writes `time_to_return(rows, target)`: `rows` holds one row per training iteration,
(env steps so far, wall seconds so far, mean return), as `side_by_side.run` records them; the answer
is (env steps, seconds) of the first row whose return is at least `target`, or None if none is.
The lesson's wall-time ratio between rlcourse and RLlib is computed with it. The checker builds its
own runs, each with a trap: NaN returns before any episode ends, a return that reaches the target
and falls back, a target met exactly, a target never reached, and a single row. Random values in
every case, so an answer typed from a printout fails.
"""

from collections.abc import Callable

import numpy as np

from rlcourse.course.exercises.common import ExerciseError, call, exercise, passed
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
    fell_back = [20.0, 60.0, target + 5, target - 30, target + 40, target + 60]
    exact = [10.0, target / 2, target, target + 1]
    never = list(np.linspace(10, target - 1, 8))
    return [("a steady rise", _run(rng, rising), target),
            ("NaN returns before the first episode ends", _run(rng, nan_first), target),
            ("a return that reached the target, then fell back", _run(rng, fell_back), target),
            ("a return exactly at the target", _run(rng, exact), target),
            ("a target never reached", _run(rng, never), target),
            ("a single row", _run(rng, [target + 1]), target)]


def _same(answer: Answer, expected: Answer) -> bool:
    if expected is None or answer is None:
        return answer is expected
    return (len(answer) == 2 and int(answer[0]) == expected[0]
            and bool(np.isclose(float(answer[1]), expected[1])))


@exercise("time_to_return", stub="time_to_return", fallback="rlcourse's first_reaching",
          reference=lambda fn: reference_time_to_return)
def check_time_to_return(fn: Callable[[np.ndarray, float], Answer]) -> Callable:
    """Check `fn` on the checker's runs; return it when right (the lesson then uses it)."""
    for what, rows, target in checker_cases():
        readonly = rows.copy()
        readonly.flags.writeable = False
        answer = call(fn, readonly, target, where=what)
        expected = reference_time_to_return(rows, target)
        if not _same(answer, expected):
            raise ExerciseError(
                f"On {what} (target {target:g}) time_to_return gave {answer!r}; expected {expected!r}"
                f" (env steps, seconds). Rows are (env steps, seconds, return): take the first row "
                "whose return is at least the target (NaN is never at least anything), return its "
                "env steps and seconds, and None if no row reaches the target.")
    passed("time_to_return finds the first iteration at the target, and None when there is none.")
    return fn
