"""What every exercise checker shares: right, wrong and not yet attempted answers, and solutions.

Exercises ship as stubs whose body is `raise NotImplementedError("TODO: ...")`. A checker calls the
learner's code through `call`; a stub's NotImplementedError becomes `NotAttempted`, which the
`exercise` decorator turns into a "Not attempted yet" message, and the checker then returns
rlcourse's own implementation so that the rest of the lesson runs on. A right answer is returned
as it is; a wrong one raises `ExerciseError` with a hint.
"""

import contextlib
import functools
import io
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

SOLUTIONS = Path(__file__).with_name("solutions")


class ExerciseError(AssertionError):
    """A wrong answer: the message says what is off and gives a hint."""


class NotAttempted(Exception):  # noqa: N818 (a state, not an error)
    """The learner's code is still the stub (it raised NotImplementedError)."""


def passed(what: str) -> None:
    """Tell the learner their answer is right."""
    print(f"Correct: {what}")


def call(fn: Callable, *args: Any, where: str = "", **kwargs: Any) -> Any:
    """Call the learner's `fn`: a stub's NotImplementedError means not attempted; any other
    exception is a wrong answer, reported with `where` (which case it happened on)."""
    try:
        return fn(*args, **kwargs)
    except NotImplementedError as e:
        raise NotAttempted(str(e)) from None
    except ExerciseError:
        raise
    except ValueError as e:
        if "read-only" in str(e):
            raise ExerciseError(
                f"{_name(fn)} tried to change one of its input arrays in place{where and f' ({where})'}"
                f": {e}. Leave the inputs as they are (the caller still needs them): compute into a "
                "new array instead (e.g. `x = x - 1` rather than `x -= 1`).") from e
        raise ExerciseError(f"{_name(fn)} raised {type(e).__name__}: {e}"
                            f"{where and f' ({where})'}") from e
    except Exception as e:
        raise ExerciseError(f"{_name(fn)} raised {type(e).__name__}: {e}"
                            f"{where and f' ({where})'}") from e


def number(value: Any, what: str, hint: str = "") -> float:
    """`value` as a float; a wrong answer, saying what `what` was instead, if it is not one number
    (None from a function that only prints, a formatted string, a dict, a column of values)."""
    if value is not None and not isinstance(value, str | bytes) and np.ndim(value) == 0:
        try:
            return float(value)
        except (TypeError, ValueError):
            pass
    got = ("None: nothing was returned (a function that prints its answer must also `return` it)"
           if value is None else f"a {type(value).__name__}, {' '.join(repr(value).split()):.80}")
    text = " (not formatted text: 1.5, not '1.5x')" if isinstance(value, str) else ""
    raise ExerciseError(f"{what} is {got}. Give one plain number{text}.{hint}")


def narrowed(hints: list[str], fn: Callable, cases: Iterable[tuple[tuple, list[tuple[Any, str]]]],
             same: Callable[[Any, Any], bool]) -> list[str]:
    """Of several `hints` that explain one wrong answer, those that `fn`'s answers on the other
    `cases` ((arguments, [(a mistake's answer, its hint)])) leave possible: a mistake is ruled out
    by a case where `fn` answers otherwise than it would. None may be left (two mistakes at once,
    or one the checker does not know): the caller then gives its general hint rather than a wrong
    one. `fn`'s prints are hidden, and a case it fails on is skipped."""
    left = list(hints)
    for args, mistakes in cases:
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                answer = fn(*args)
        except Exception:  # only narrows the hints: the wrong answer is already found
            continue
        left = [hint for hint in left
                if all(_safely(same, answer, wrong) for wrong, h in mistakes if h == hint)]
    return left


def _safely(same: Callable[[Any, Any], bool], answer: Any, wrong: Any) -> bool:
    try:
        return bool(same(answer, wrong))
    except (TypeError, ValueError):
        return False


def _name(fn: Callable) -> str:
    return getattr(fn, "__name__", "your code")


def solution_source(name: str) -> str:
    """The text of exercise `name`'s solution (rlcourse/course/exercises/solutions/<name>.py)."""
    path = SOLUTIONS / f"{name}.py"
    if not path.is_file():
        known = sorted(p.stem for p in SOLUTIONS.glob("*.py") if p.stem != "__init__")
        raise KeyError(f"No exercise named {name!r}; the exercises are {known}.")
    return path.read_text()


def show_solution(name: str) -> None:
    """Print a solution of exercise `name`, to read (or paste over the stub) when stuck."""
    print(f"# A solution of the exercise {name!r} (rlcourse/course/exercises/solutions/{name}.py)\n")
    print(solution_source(name))


def exercise(name: str, stub: str, fallback: str, reference: Callable[..., Any]):
    """Decorate a checker of exercise `name`: when the learner's code is still the stub, print that it
    is not attempted yet and return `reference(*checker_args)` so that the lesson can go on."""

    def decorate(checker: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(checker)
        def run(*args: Any, **kwargs: Any) -> Any:
            try:
                return checker(*args, **kwargs)
            except NotAttempted as e:
                print(f"Not attempted yet: {stub} still raises NotImplementedError ({e}).\n"
                      f"  Write your answer in its place and run the cell again: the checker says "
                      f"whether it is right, or what looks wrong.\n"
                      f"  Stuck? show_solution({name!r}) prints a solution.\n"
                      f"  Until then the lesson goes on with {fallback}.")
                return reference(*args, **kwargs)

        run.exercise_name = name
        return run

    return decorate
