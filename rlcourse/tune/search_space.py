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
    range's bounds (floats for a Float range, as Tune samples); [] where they cannot be known
    (tune.sample_from). ValueError for a grid that is no list, or an empty grid or choice."""
    if isinstance(space, dict) or hasattr(space, "categories"):
        values = space["grid_search"] if isinstance(space, dict) else space.categories
        if not isinstance(values, list | tuple):
            raise ValueError(f"grid_search takes a list of values, e.g. tune.grid_search([{values!r}]).")
        if not values:
            raise ValueError("the search space is empty: give it at least one value.")
        return list(values)
    if hasattr(space, "lower") and hasattr(space, "upper"):
        q = getattr(space.sampler, "q", 1)
        if type(space).__name__ == "Integer" and q != 1:  # qrandint: multiples of q in [a, b]
            return [-(-space.lower // q) * q, space.upper // q * q]
        if type(space).__name__ == "Integer":  # tune.randint(a, b) draws from [a, b)
            return [space.lower, space.upper - 1]
        return [float(space.lower), float(space.upper)]
    return []


def resolved(value: Any, default: Any = None) -> Any:
    """`value` with each search space in it replaced by its first candidate (one that cannot be
    known, tune.sample_from's, by `default`'s value at its place)."""
    if is_search_space(value):
        return next(iter(candidates(value)), default)
    if isinstance(value, dict):
        default = default if isinstance(default, dict) else {}
        return {k: resolved(v, default.get(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(resolved(v) for v in value)
    return value


def variants(value: Any, base: Any) -> list[Any]:
    """`base` (`value` resolved) with each nested search space set to each of its candidates."""
    if is_search_space(value):
        return candidates(value)
    if isinstance(value, dict):
        return [{**base, k: v} for k, sub in value.items() for v in variants(sub, base[k])]
    if isinstance(value, list | tuple):
        return [type(base)((*base[:i], v, *base[i + 1:])) for i, sub in enumerate(value)
                for v in variants(sub, base[i])]
    return []


def check_search_spaces(config: "AlgorithmConfig") -> None:
    """Validate the config once per candidate of each search space (the others at their first);
    raise a ConfigError naming the setting and the value that fails."""
    spaces = {name: value for name, value in vars(config).items() if contains_search_space(value)}
    base, defaults, trials = copy.deepcopy(config), type(config)(), [(None, None)]
    for name, value in spaces.items():
        try:
            setattr(base, name, resolved(value, getattr(defaults, name, None)))
            trials += [(name, v) for v in variants(value, getattr(base, name))]
        except ValueError as e:  # a space of no candidates' form
            raise ConfigError(name, value, str(e), setter_of(config, name)) from None
    for name, candidate in trials:
        trial = copy.deepcopy(base)
        if name is not None:
            setattr(trial, name, candidate)
        try:
            trial.validate()
        except ConfigError as e:
            if e.setting not in spaces:
                raise  # an error of its own, whatever the search spaces take
            value, space = getattr(trial, e.setting), spaces[e.setting]
            hint = (" (tune.uniform and tune.loguniform give floats: use tune.randint for whole "
                    "numbers)" if type(space).__name__ == "Float" and "whole" in str(e) else "")
            raise ConfigError(e.setting, space, f"the search space can take {value!r}{hint}, "
                              f"which fails: {e}", setter_of(config, e.setting)) from None
