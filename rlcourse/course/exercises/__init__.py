"""Exercise checkers: each lesson's exercises end with a call to one of these on the learner's answer.

A checker returns quietly (after printing a short confirmation) when the answer is right, and raises
`ExerciseError` with a hint when it is not. Each checker lives in a module of this package named after
its topic; every name a module lists in `__all__` is available here, e.g.
`rlcourse.course.exercises.check_gae`.

Exercises ship unsolved: a checker given the untouched stub prints "Not attempted yet" and returns
rlcourse's own implementation, so the lesson goes on; `show_solution(name)` prints a solution.
"""

import importlib
import pkgutil

from rlcourse.course.exercises.common import ExerciseError, show_solution

__all__ = ["ExerciseError", "show_solution"]
for _info in pkgutil.iter_modules(__path__):
    if _info.name not in ("common", "solutions"):
        _module = importlib.import_module(f"{__name__}.{_info.name}")
        for _name in getattr(_module, "__all__", []):
            globals()[_name] = getattr(_module, _name)
            __all__.append(_name)
