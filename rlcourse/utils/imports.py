"""Classes named by "module:Qualname" strings, for names that travel as data (a checkpoint's
`config_class`, a tuned example's env)."""

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
