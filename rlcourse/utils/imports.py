"""Classes named by "module:Qualname" strings, imported only where they are used.

A config names its Algorithm and Learner classes as strings instead of importing them, because the
config travels to every EnvRunner actor, and a runner process must not import torch (~120 MB and
seconds of start-up) through a Learner class it never calls. The class is imported where it runs.
"""

from importlib import import_module
from typing import Any


def class_path(obj: Any) -> str:
    """The "module:Qualname" string that `import_attr` turns back into `obj`."""
    return f"{obj.__module__}:{obj.__qualname__}"


def import_attr(path: str) -> Any:
    """Import "module:Qualname" (e.g. "rlcourse.algorithms.ppo.ppo:PPO") and return the object."""
    module, _, qualname = path.partition(":")
    obj = import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj
