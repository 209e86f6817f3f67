"""ConfigError: a bad setting's error, naming the setting, its setter and the fix."""

import inspect
from typing import Any


class ConfigError(ValueError):
    """A setting is invalid. `setting` names it; the message says which setter and how to fix it."""

    def __init__(self, setting: str, value: Any, fix: str, setter: str | None = None):
        self.setting, self.fix = setting, fix
        where = f"config.{setter}({setting}=...)" if setter else setting
        super().__init__(f"Invalid setting {setting}={value!r} in {where}: {fix}")

    def __reduce__(self) -> tuple:
        """Rebuilt from its message, so that it crosses processes (a runner actor's error reaches
        the driver as a ConfigError)."""
        return _rebuild, (type(self), str(self), self.setting, self.fix)


def _rebuild(cls: type, message: str, setting: str, fix: str) -> ConfigError:
    error = cls.__new__(cls)
    ValueError.__init__(error, message)
    error.setting, error.fix = setting, fix
    return error


def setter_of(config: Any, setting: str) -> str | None:
    """The fluent method that takes `setting` ('env_runners' for 'num_env_runners'), from the
    setters' signatures in the class and its bases (a subclass's setter may take **kwargs)."""
    for name in dir(type(config)):
        if name.startswith("_"):
            continue
        for cls in type(config).__mro__:
            method = cls.__dict__.get(name)
            if inspect.isfunction(method) and setting in inspect.signature(method).parameters:
                return name
    return None


def fail(config: Any, setting: str, fix: str) -> None:
    """Raise the ConfigError for `config`'s `setting`, naming its setter."""
    raise ConfigError(setting, getattr(config, setting, None), fix, setter_of(config, setting))

