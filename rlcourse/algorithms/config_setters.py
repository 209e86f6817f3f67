"""`@setter`: an AlgorithmConfig setter stores each keyword given (not `NotProvided`: None can be a
real value) and returns the config; an unknown keyword's error names RLlib's new name or a typo's fix."""

import copy
import difflib
import functools
import inspect
from collections.abc import Callable
from typing import Any

from rlcourse.tune.search_space import check_tunable
from rlcourse.utils.imports import import_attr
from rlcourse.utils.validation import ConfigError, setter_of


class _NotProvided:
    def __repr__(self) -> str:  # how signatures show it
        return "NotProvided"


NotProvided: Any = _NotProvided()  # a setter argument the caller left out

# RLlib's old names -> where they went in RLlib's new API stack (and in rlcourse).
RENAMED = {
    "train_batch_size": "training(train_batch_size_per_learner=...)",
    "sgd_minibatch_size": "training(minibatch_size=...)", "num_sgd_iter": "training(num_epochs=...)",
    "num_rollout_workers": "env_runners(num_env_runners=...)",
    "num_workers": "env_runners(num_env_runners=...)",
    "num_envs_per_worker": "env_runners(num_envs_per_env_runner=...)",
    "num_cpus_per_worker": "env_runners(num_cpus_per_env_runner=...)",
    "num_gpus_per_worker": "env_runners(num_gpus_per_env_runner=...)",
    "num_gpus": "learners(num_gpus_per_learner=...)",
    "num_learner_workers": "learners(num_learners=...)",
    "recreate_failed_env_runners": "fault_tolerance(restart_failed_env_runners=...)",
    "recreate_failed_workers": "fault_tolerance(restart_failed_env_runners=...)",
    "evaluation_num_workers": "evaluation(evaluation_num_env_runners=...)",
    "model": "rl_module(model_config={...})"}
# Setters RLlib renamed: calling one raises with the new setter.
RENAMED_SETTERS = {"rollouts": "env_runners", "exploration": "env_runners(explore=...)"}


def _settings_of(config_class: type, setter: str) -> list[str]:
    """Every keyword `setter` takes in `config_class` and its bases (a subclass adds its own)."""
    names: list[str] = []
    for cls in config_class.__mro__:
        method = inspect.unwrap(cls.__dict__.get(setter, lambda: None))
        names += [name for name, p in inspect.signature(method).parameters.items()
                  if name != "self" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
                  and name not in names]
    return names


def refuse(config: Any, setter: str, setting: str, value: Any) -> None:
    """Raise the ConfigError for `setter(setting=value)`, a keyword the setter does not take."""
    elsewhere = setter_of(config, setting)  # (None from update_from_dict: it takes every setting)
    if elsewhere:
        fix = f"it is set with config.{elsewhere}({setting}=...), as in RLlib."
    elif setting in RENAMED:
        fix = f"that is RLlib's old name (before its new API stack); use config.{RENAMED[setting]}."
    elif setter == "update_from_dict":
        close = difflib.get_close_matches(setting, sorted(vars(config)), n=1)
        fix = f"{type(config).__name__} has no setting {setting!r}"
        fix += f"; did you mean {close[0]!r}?" if close else "."
    else:
        known = _settings_of(type(config), setter)
        close = difflib.get_close_matches(setting, known, n=1)
        fix = f"{setter}() has no setting {setting!r}"
        fix += (f"; did you mean {close[0]!r}?" if close else ".") + f" Its settings are {known}."
    raise ConfigError(setting, value, fix, setter)


def merge(setting: str, given: Any, into: Any) -> dict:
    """`{setting: ...}` for a dict setting whose given keys replace those `into` has (RLlib's
    deep_update); a value that is not a dict is kept as given, for validate() to name."""
    if given is NotProvided:
        return {}
    return {setting: copy.deepcopy({**into, **given} if isinstance(into, dict)
                                   and isinstance(given, dict) else given)}


def config_class_named(path: Any, base: type) -> type:
    """The `base` subclass that `from_dict`'s "module:Qualname" `config_class` names (None: base)."""
    try:
        found = base if path is None else import_attr(path)
    except (ImportError, AttributeError, TypeError, ValueError):
        found = None
    if not (isinstance(found, type) and issubclass(found, base)):
        raise ConfigError("config_class", path, f"from_dict needs a {base.__name__} class as to_dict() "
                          "names it, 'module:Qualname', e.g. 'rlcourse.algorithms.ppo.ppo:PPOConfig'.")
    return found


def setter(method: Callable) -> Callable:
    """Make `method` a fluent setter (see above). A subclass's setter that passes the rest of its
    keywords on with **kwargs (PPOConfig.training) calls its base's, which checks them."""
    signature = inspect.signature(method)
    passes_rest_on = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())

    @functools.wraps(method)
    def set_settings(self: Any, *args: Any, **kwargs: Any) -> Any:
        for setting, value in kwargs.items():
            if not passes_rest_on and setting not in signature.parameters:
                refuse(self, method.__name__, setting, value)
            check_tunable(setting, value, method.__name__)
        given = signature.bind(self, *args, **kwargs).arguments
        settings = {name: value for name, value in given.items()
                    if name in vars(self) and value is not NotProvided}
        settings.update(method(self, *args, **kwargs) or {})
        for name, value in settings.items():
            setattr(self, name, value)
        return self

    return set_settings
