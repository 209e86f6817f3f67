"""A checkpoint's config as JSON, classes and functions named "module:qualname"; loading imports a
name only if it is one of `PACKAGE_CLASSES`, an object the caller allows (`from_checkpoint(path,
allowed=[MyCallbacks])`) or a registered env, never because the file says so (think `os:system`)."""

import json
import sys
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import gymnasium as gym
import numpy as np

from rlcourse.utils.checkpoints import CheckpointError
from rlcourse.utils.imports import class_path, import_attr


class SupportsToDict(Protocol):
    """What saving a config needs of it (an AlgorithmConfig; utils/ names no config class above it)."""

    def to_dict(self) -> dict[str, Any]: ...

# The classes a checkpoint may name unasked, by qualname, with the module they live in now: loading
# imports these paths (data, so utils/ imports no higher layer), never a path read from a file.
PACKAGE_CLASSES: dict[str, str] = {
    "AlgorithmConfig": "rlcourse.algorithms.algorithm_config",
    "PPOConfig": "rlcourse.algorithms.ppo.ppo",
    "IMPALAConfig": "rlcourse.algorithms.impala.impala",
    "APPOConfig": "rlcourse.algorithms.appo.appo",
    "DQNConfig": "rlcourse.algorithms.dqn.dqn",
    "ApexDQNConfig": "rlcourse.algorithms.apex_dqn.apex_dqn",
    "SACConfig": "rlcourse.algorithms.sac.sac",
    "BCConfig": "rlcourse.algorithms.bc.bc",
    "MARWILConfig": "rlcourse.algorithms.marwil.marwil",
    "CQLConfig": "rlcourse.algorithms.cql.cql",
    "OfflineSingleAgentEnvRunner": "rlcourse.offline.offline_env_runner",  # offline_data(output=)
    "Callbacks": "rlcourse.callbacks.callbacks",
    "RLModule": "rlcourse.core.rl_module.rl_module",
    "DefaultActorCriticModule": "rlcourse.core.rl_module.rl_module",
    "DefaultDQNModule": "rlcourse.algorithms.dqn.dqn_rl_module",
    "DefaultSACModule": "rlcourse.algorithms.sac.sac_rl_module",
    # Connector classes, which are their own factories: env_to_module_connector=FlattenObservations
    "FlattenObservations": "rlcourse.connectors.env_to_module.flatten_observations",
    "MeanStdFilter": "rlcourse.connectors.env_to_module.mean_std_filter",
    # The runner for simulators outside Ray: env_runners(env_runner_cls=...)
    "EnvRunnerServerForExternalInference":
        "rlcourse.env.external.env_runner_server_for_external_inference",
}


def _in_package(module: str) -> bool:
    return module == "rlcourse" or module.startswith("rlcourse.")


def names_class(name: str, obj: Any) -> bool:
    """Whether "module:qualname" names `obj`; a class of this package by any module path inside
    rlcourse, as checkpoints keep the paths of the day they were saved."""
    if name == class_path(obj):
        return True
    module, _, qualname = name.partition(":")
    return (qualname in PACKAGE_CLASSES and qualname == obj.__qualname__
            and _in_package(module) and _in_package(obj.__module__))


def resolve_name(name: str, where: str, allowed: Iterable[Any] = ()) -> Any:
    """The object that `name` stands for, if the loader expects it; `where` names the JSON field."""
    for obj in allowed:
        if names_class(name, obj):
            return obj
    module, _, qualname = name.partition(":")
    if _in_package(module) and qualname in PACKAGE_CLASSES:
        return import_attr(f"{PACKAGE_CLASSES[qualname]}:{qualname}")
    raise CheckpointError(
        f"{where} names {name!r}, which loading a checkpoint does not import: a checkpoint may name "
        "only rlcourse's config, callback and RL module classes, env names given to "
        "rlcourse.register_env and gymnasium ids. If you trust this checkpoint and "
        f"{qualname or name!r} is yours, import it and allow it: "
        f"Algorithm.from_checkpoint(path, allowed=[{qualname.rpartition('.')[2] or '...'}]).")


def _check_env_name(env: str, where: str, is_registered: Callable[[str], bool]) -> None:
    """gymnasium imports "pkg" to make "pkg:MyEnv-v0": accept such an id only if it is registered
    or its module is already imported."""
    module, colon, _ = env.partition(":")
    if colon and not is_registered(env) and module not in sys.modules:
        raise CheckpointError(
            f"{where} is {env!r}: gymnasium would import the module {module!r} to make it, and "
            f"loading a checkpoint imports nothing the file names. If you trust it, `import {module}` "
            "before loading the checkpoint.")


def _space_to_json(space: gym.Space) -> dict[str, Any]:
    """A Box or Discrete space (environment(observation_space=...)) as JSON."""
    if isinstance(space, gym.spaces.Discrete):
        return {"__space__": "Discrete", "n": int(space.n), "start": int(space.start)}
    if isinstance(space, gym.spaces.Box):
        return {"__space__": "Box", "low": space.low.tolist(), "high": space.high.tolist(),
                "dtype": space.dtype.name}
    raise CheckpointError(f"Cannot save the space {space!r} in a config: only Box and Discrete.")


def _space_from_json(value: dict[str, Any], where: str) -> gym.Space:
    try:
        if value["__space__"] == "Discrete":
            return gym.spaces.Discrete(int(value["n"]), start=int(value["start"]))
        if value["__space__"] == "Box" and value["dtype"] in ("float32", "float64"):
            return gym.spaces.Box(np.asarray(value["low"], value["dtype"]),
                                  np.asarray(value["high"], value["dtype"]), dtype=value["dtype"])
    except (KeyError, TypeError, ValueError):
        pass
    raise CheckpointError(f"{where} is not a Box or Discrete space as rlcourse saves one.")


def config_to_json(config: SupportsToDict) -> dict[str, Any]:
    """The config's settings as JSON-compatible values (classes and functions by import path)."""
    document = {}
    for setting, value in config.to_dict().items():
        if isinstance(value, type) or callable(value):
            if "<" in getattr(value, "__qualname__", ""):  # <lambda> or <locals>: not importable
                raise CheckpointError(
                    f"Cannot save config.{setting}={value!r}: it is defined inside a function or "
                    "is a lambda. Use a module-level class or function, or give the env a name "
                    "with rlcourse.register_env(name, creator) and pass the name.")
            value = {"__import__": class_path(value)}
        elif isinstance(value, gym.Space):
            value = _space_to_json(value)
        elif isinstance(value, set | frozenset):  # e.g. multi_agent(policies={"main", "opponent"})
            value = sorted(value, key=str)
        try:
            json.dumps(value, allow_nan=True)
        except (TypeError, ValueError):
            raise CheckpointError(f"Cannot save config.{setting}={value!r} as JSON: use numbers, "
                                  "strings, lists and dicts in settings such as env_config.") from None
        document[setting] = value
    return document


def config_from_json(document: dict[str, Any], source: str, allowed: Iterable[Any] = (),
                     skip: Iterable[str] = (),
                     is_registered: Callable[[str], bool] = lambda env: False
                     ) -> SupportsToDict:
    """Rebuild the config written by `config_to_json`; `source` names the file in errors. Settings
    in `skip` keep their defaults; `is_registered` tells register_env names (rlcourse.env.registry)."""
    allowed = list(allowed)
    settings = dict(document)
    where = f"{source}: config.config_class"
    config_class = resolve_name(str(settings.pop("config_class", "")), where, allowed)
    base = resolve_name("rlcourse:AlgorithmConfig", where)  # from the table: utils imports no config
    if not (isinstance(config_class, type) and issubclass(config_class, base)):
        raise CheckpointError(f"{where} names {config_class!r}, which is not an AlgorithmConfig.")
    config = config_class()
    unknown = set(settings) - set(vars(config))
    if unknown:
        raise CheckpointError(f"{source}: config has settings {sorted(unknown)} that "
                              f"{config_class.__name__} does not have: the file was edited or is "
                              "from another version of rlcourse.")
    for setting, value in settings.items():
        if setting in skip:
            continue
        where = f"{source}: config.{setting}"
        if isinstance(value, dict) and "__import__" in value:
            value = resolve_name(str(value["__import__"]), where, allowed)
        elif isinstance(value, dict) and "__space__" in value:
            value = _space_from_json(value, where)
        elif setting == "env" and isinstance(value, str):
            _check_env_name(value, where, is_registered)
        setattr(config, setting, value)
    return config
