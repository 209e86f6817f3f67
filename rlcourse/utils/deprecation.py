"""RLlib's old setting names, still found in tutorials, refused with the name that replaced them.

A learner who pastes `.training(sgd_minibatch_size=128)` from an older guide should learn the new
name, not read a bare TypeError. RLlib does the same in its own `rllib/utils/deprecation.py`.
Every fluent setter of AlgorithmConfig is wrapped by `checked_settings`: a keyword it does not take
raises a ConfigError that names the replacement (old names) or the setter's settings (typos), and a
Ray Tune search space on a setting that cannot take one is refused (rlcourse/tune/search_space.py).
"""

import difflib
import functools
import inspect
from collections.abc import Callable
from typing import Any

from rlcourse.tune.search_space import check_tunable
from rlcourse.utils.validation import ConfigError, setter_of

# RLlib's old names -> where they went in RLlib's new API stack (and in rlcourse).
RENAMED = {
    "train_batch_size": "training(train_batch_size_per_learner=...)",
    "sgd_minibatch_size": "training(minibatch_size=...)",
    "num_sgd_iter": "training(num_epochs=...)",
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
    "model": "rl_module(model_config={...})",
}
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
    """Raise the ConfigError for `setter(setting=value)`, a keyword the setter does not take
    (`update_from_dict` takes every setting of the config)."""
    elsewhere = setter_of(config, setting)
    if elsewhere and setter != "update_from_dict":
        fix = f"it is set with config.{elsewhere}({setting}=...), as in RLlib."
    elif setting in RENAMED:
        fix = (f"that is RLlib's old name (before its new API stack); use "
               f"config.{RENAMED[setting]} instead.")
    else:
        every = setter == "update_from_dict"
        known = sorted(vars(config)) if every else _settings_of(type(config), setter)
        close = difflib.get_close_matches(setting, known, n=1)
        fix = (f"{type(config).__name__} has no setting {setting!r}" if every
               else f"{setter}() has no setting {setting!r}")
        fix += f"; did you mean {close[0]!r}?" if close else "."
        if not every:
            fix += f" Its settings are {known}."
    raise ConfigError(setting, value, fix, setter)


def checked_settings(setter: Callable) -> Callable:
    """Wrap a fluent setter so that a keyword it does not take raises a ConfigError (see above).

    A setter with **kwargs (PPOConfig.training) passes the rest on to its base's, which checks them.
    """
    parameters = inspect.signature(setter).parameters
    passes_rest_on = any(p.kind is p.VAR_KEYWORD for p in parameters.values())

    @functools.wraps(setter)
    def checked(self, *args: Any, **kwargs: Any) -> Any:
        for setting, value in kwargs.items():
            if not passes_rest_on and setting not in parameters:
                refuse(self, setter.__name__, setting, value)
            check_tunable(setting, value, setter.__name__)
        return setter(self, *args, **kwargs)

    return checked
