"""Classes named by "module:Qualname" strings: how a config's dict and a checkpoint name its class
(`config_class`), and how a tuned example's YAML or a Serve config names an env or a builder.

Code names classes by importing them; these strings are for names that travel as data.
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
