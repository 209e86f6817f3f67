"""Ray Tune search spaces as setting values (`training(lr=tune.grid_search([1e-3, 3e-4]))`),
validated for every value they can take before any trial starts; recognized without importing Tune."""

import copy
from typing import TYPE_CHECKING, Any

from rlcourse.utils.validation import ConfigError, setter_of

if TYPE_CHECKING:
    from rlcourse.algorithms.algorithm_config import AlgorithmConfig

# Settings whose setter does more than store the value, so a search space cannot stand in for it.
NOT_TUNABLE = {
    "model_config": "its setter merges your dict into the defaults: put the search space inside, "
                    "e.g. rl_module(model_config={'fcnet_hiddens': tune.grid_search([[32], [64]])}).",
    "framework": "rlcourse's learners are PyTorch only: leave framework() out.",
}


def is_search_space(value: Any) -> bool:
    """A Tune Domain (tune.uniform, tune.choice, ...) or a `tune.grid_search([...])` dict."""
    if isinstance(value, dict):
        return set(value) == {"grid_search"}
    return type(value).__module__.startswith("ray.tune.search") and hasattr(value, "sample")


def contains_search_space(value: Any) -> bool:
    if isinstance(value, dict) and not is_search_space(value):
        value = list(value.values())
    if isinstance(value, list | tuple):
        return any(contains_search_space(v) for v in value)
    return is_search_space(value)


def check_tunable(setting: str, value: Any, setter: str) -> None:
    """Refuse a search space on a setting that cannot take one (see NOT_TUNABLE)."""
    if setting in NOT_TUNABLE and is_search_space(value):
        raise ConfigError(setting, value, f"a search space cannot vary {setting}: "
                          + NOT_TUNABLE[setting], setter)


def candidates(space: Any) -> list[Any]:
    """The values that tell whether all of `space`'s are valid: every grid value or category, a
    range's bounds; [] where they cannot be known (tune.sample_from)."""
    if isinstance(space, dict):
        return list(space["grid_search"])
    if hasattr(space, "categories"):
        return list(space.categories)
    if hasattr(space, "lower") and hasattr(space, "upper"):
        integer = isinstance(space.upper, int)  # tune.randint(a, b) draws from [a, b)
        return [space.lower, space.upper - 1 if integer else space.upper]
    return []


def resolved(value: Any) -> Any:
    """`value` with each search space in it replaced by its first candidate (None if unknown)."""
    if is_search_space(value):
        return next(iter(candidates(value)), None)
    if isinstance(value, dict):
        return {k: resolved(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(resolved(v) for v in value)
    return value


def check_search_spaces(config: "AlgorithmConfig") -> None:
    """Validate the config once per candidate of each search space (the others at their first);
    raise a ConfigError naming the setting and the value that fails."""
    spaces = {name: value for name, value in vars(config).items() if contains_search_space(value)}
    base = copy.deepcopy(config)
    for name, value in spaces.items():
        setattr(base, name, resolved(value))
    trials = [(None, None)] + [(name, candidate) for name, space in spaces.items()
                               for candidate in (candidates(space) if is_search_space(space) else [])]
    for name, candidate in trials:
        trial = copy.deepcopy(base)
        if name is not None:
            setattr(trial, name, candidate)
        try:
            trial.validate()
        except ConfigError as e:
            if e.setting not in spaces:
                raise  # an error of its own, whatever the search spaces take
            value = candidate if name == e.setting else getattr(trial, e.setting)
            raise ConfigError(e.setting, spaces[e.setting], f"the search space can take "
                              f"{value!r}, which fails: {e}", setter_of(config, e.setting)) from None
