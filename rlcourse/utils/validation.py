"""ConfigError and the checks every room uses on its settings: a bad setting fails at build time with
a message that names the setter and the fix. The checks of AlgorithmConfig's own settings are in
rlcourse/algorithms/config_validation.py."""

import inspect
import numbers
from typing import Any


class ConfigError(ValueError):
    """A setting is invalid. `setting` names it; the message says which setter and how to fix it."""

    def __init__(self, setting: str, value: Any, fix: str, setter: str | None = None):
        self.setting = setting
        where = f"config.{setter}({setting}=...)" if setter else setting
        super().__init__(f"Invalid setting {setting}={value!r} in {where}: {fix}")


def setter_of(config: Any, setting: str) -> str | None:
    """The fluent method that takes `setting`, e.g. 'env_runners' for 'num_env_runners'.

    Found from the setters' signatures, so a new setting needs no list kept here. A subclass's setter
    may pass the rest on as **kwargs, hence the look through the base classes too.
    """
    for name in dir(type(config)):
        if name.startswith("_"):
            continue
        for cls in type(config).__mro__:
            method = cls.__dict__.get(name)
            if inspect.isfunction(method) and setting in inspect.signature(method).parameters:
                return name
    return None


def fail(config: Any, setting: str, fix: str) -> None:
    raise ConfigError(setting, getattr(config, setting, None), fix, setter_of(config, setting))


def is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_int(config: Any, setting: str, minimum: int) -> None:
    value = getattr(config, setting)
    if not is_int(value) or value < minimum:
        fail(config, setting, f"use a whole number >= {minimum}.")


def check_bool(config: Any, setting: str, meaning: str) -> None:
    if not isinstance(getattr(config, setting), bool):
        fail(config, setting, f"use {meaning}.")


def check_number(config: Any, setting: str, low: float, high: float = float("inf"),
                 low_open: bool = False, hint: str = "") -> None:
    value = getattr(config, setting)
    ok = is_number(value) and (value > low if low_open else value >= low) and value <= high
    if not ok:
        bracket = "(" if low_open else "["
        fix = f"use a number in {bracket}{low}, {high}]." + (f" {hint}" if hint else "")
        fail(config, setting, fix)
