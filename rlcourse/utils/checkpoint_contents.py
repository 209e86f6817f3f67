"""What a checkpoint holds, and whether this process may use it (checkpoints.py reads the files).

A checkpoint's config names its config class ("module:qualname") and any class or function it was
given ({"__import__": "module:qualname"}: callbacks, a custom RLModule, an env class or creator).
Loading never imports or calls a name because the file says so: an edited checkpoint must not be
able to run `os:system`. A name is looked up among the objects the loader expects:

    - this package's config, callback and RL module classes (`PACKAGE_CLASSES`), also under any
      older module path inside rlcourse (checkpoints keep the paths of the day they were saved);
    - the objects the caller allows: `Algorithm.from_checkpoint(path, allowed=[MyCallbacks])`;
    - for config.env: a name given to `register_env`, or a gymnasium id.

Anything else is refused with an error naming the file, the setting and the fix.
`check_restorable` compares a checkpoint with the algorithm it is restored into, before the
restore changes anything, so a mismatch leaves the algorithm as it was.
"""

import json
import sys
from collections.abc import Iterable
from typing import Any

from rlcourse.env.env_state import wrapper_layers
from rlcourse.env.registry import is_registered
from rlcourse.utils.checkpoints import CheckpointError
from rlcourse.utils.imports import class_path, import_attr

# The classes a checkpoint may name without the caller allowing them, by qualname, with the module
# they live in now. Loading imports these paths, written here, never a path read from a file.
PACKAGE_CLASSES: dict[str, str] = {
    "AlgorithmConfig": "rlcourse.algorithms.algorithm_config",
    "PPOConfig": "rlcourse.algorithms.ppo.ppo",
    "IMPALAConfig": "rlcourse.algorithms.impala.impala",
    "DQNConfig": "rlcourse.algorithms.dqn.dqn",
    "ApexDQNConfig": "rlcourse.algorithms.apex_dqn.apex_dqn_config",
    "SACConfig": "rlcourse.algorithms.sac.sac",
    "Callbacks": "rlcourse.callbacks.callbacks",
    "RLModule": "rlcourse.core.rl_module.rl_module",
    "DefaultActorCriticModule": "rlcourse.core.rl_module.rl_module",
    "DefaultDQNModule": "rlcourse.algorithms.dqn.dqn_rl_module",
    "DefaultSACModule": "rlcourse.algorithms.sac.sac_rl_module",
}
# The bit generators numpy's Generator state may name (env_state.from_plain calls the named one).
BIT_GENERATORS = {"PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64"}


def _in_package(module: str) -> bool:
    return module == "rlcourse" or module.startswith("rlcourse.")


def _matches(name: str, obj: Any) -> bool:
    """Whether "module:qualname" names `obj`: by its own path, or, for a class of this package, by
    any module path inside rlcourse (classes moved when the package took RLlib's layout)."""
    if name == class_path(obj):
        return True
    module, _, qualname = name.partition(":")
    return (qualname in PACKAGE_CLASSES and qualname == obj.__qualname__
            and _in_package(module) and _in_package(obj.__module__))


def resolve_name(name: str, where: str, allowed: Iterable[Any] = ()) -> Any:
    """The object that `name` stands for, if the loader expects it; `where` names the JSON field."""
    for obj in allowed:
        if _matches(name, obj):
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


def _check_env_name(env: str, where: str) -> None:
    """gymnasium imports the module named before ':' in an id such as "pkg:MyEnv-v0": accept such an
    id only if it is a register_env name or that module is already imported (importing runs nothing)."""
    module, colon, _ = env.partition(":")
    if colon and not is_registered(env) and module not in sys.modules:
        raise CheckpointError(
            f"{where} is {env!r}: gymnasium would import the module {module!r} to make it, and "
            f"loading a checkpoint imports nothing the file names. If you trust it, `import {module}` "
            "before loading the checkpoint.")


# -- the config as JSON ---------------------------------------------------------------------------

def _import_path(value: Any, setting: str) -> dict[str, str]:
    """A class or function as {"__import__": "module:qualname"}."""
    qualname = getattr(value, "__qualname__", "")
    if "<" in qualname:  # <lambda> or <locals>: nothing to import it from
        raise CheckpointError(
            f"Cannot save config.{setting}={value!r}: it is defined inside a function or is a "
            "lambda. Use a module-level class or function, or give the env a name with "
            "rlcourse.register_env(name, creator) and pass the name.")
    return {"__import__": class_path(value)}


def config_to_json(config: Any) -> dict[str, Any]:
    """The config's settings as JSON-compatible values (classes and functions by import path)."""
    document = {}
    for setting, value in config.to_dict().items():
        if isinstance(value, type) or callable(value):
            value = _import_path(value, setting)
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
                     skip: Iterable[str] = ()) -> Any:
    """Rebuild the config written by `config_to_json`; `source` names the file in errors. The
    settings in `skip` keep their defaults (what they name is neither needed nor imported)."""
    from rlcourse.algorithms.algorithm_config import AlgorithmConfig

    allowed = list(allowed)
    settings = dict(document)
    where = f"{source}: config.config_class"
    config_class = resolve_name(str(settings.pop("config_class", "")), where, allowed)
    if not (isinstance(config_class, type) and issubclass(config_class, AlgorithmConfig)):
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
        elif setting == "env" and isinstance(value, str):
            _check_env_name(value, where)
        setattr(config, setting, value)
    return config


def check_plain_data(value: Any, where: str) -> None:
    """Refuse random-generator states that name anything but a numpy bit generator."""
    if isinstance(value, list):
        for item in value:
            check_plain_data(item, where)
    elif isinstance(value, dict):
        if "__generator__" in value:
            name = value["__generator__"].get("bit_generator") if isinstance(
                value["__generator__"], dict) else None
            if name not in BIT_GENERATORS:
                raise CheckpointError(f"{where}: a random generator state names bit_generator "
                                      f"{name!r}; expected one of {sorted(BIT_GENERATORS)}.")
        for item in value.values():
            check_plain_data(item, where)


# -- before a restore -----------------------------------------------------------------------------

def env_layers(runner: Any) -> list[int] | None:
    """How many layers (env and wrappers) each sub-env of an EnvRunner has; None for ASYNC sub-envs
    (they run in other processes and their episodes restart instead of being restored)."""
    envs = getattr(getattr(runner, "env", None), "envs", None)  # a MultiAgentEnvRunner has no env
    return None if envs is None else [len(wrapper_layers(env)) for env in envs]


def _shapes(tensors: dict[str, Any]) -> dict[str, tuple]:
    return {key: tuple(getattr(value, "shape", ())) for key, value in tensors.items()}


def check_restorable(state: dict[str, Any], tensors: dict[str, Any], config: Any,
                     learner_state: dict[str, Any], runner_layers: list[list[int] | None],
                     eval_runner_layers: list[list[int] | None] | None = None) -> None:
    """Raise CheckpointError unless the checkpoint (`state`, `tensors`) fits the algorithm with this
    `config`, learner state and `env_layers` of its runners (and of its evaluation runners, when
    the checkpoint has theirs). Checks everything a restore would fail on halfway (the iteration
    counters already overwritten), so it can then apply all of it."""
    name = str(state.get("config", {}).get("config_class", ""))
    if not _matches(name, type(config)):
        raise CheckpointError(
            f"The checkpoint is of {name!r}, this algorithm's config is {class_path(type(config))!r}: "
            "restore it into an algorithm built from that config, or use "
            "Algorithm.from_checkpoint(path), which builds it.")
    missing = [key for key in ("algorithm", "learner", "env_runners") if key not in state]
    if "learner.pt" not in tensors:
        missing.append("learner.pt")
    if missing:
        raise CheckpointError(f"The checkpoint is incomplete: it has no {', '.join(missing)}.")
    check_plain_data(state, "The checkpoint")
    saved = {**state["learner"], **tensors["learner.pt"]}
    if set(saved) != set(learner_state):
        raise CheckpointError(f"The checkpoint's learner state has {sorted(saved)}, this "
                              f"algorithm's learner has {sorted(learner_state)}.")
    model = "Build the algorithm with the checkpoint's model_config, or use Algorithm.from_checkpoint."
    multi_agent = "param_groups" not in learner_state["optimizer"]  # an optimizer per module
    if multi_agent and set(saved["optimizer"]) != set(learner_state["optimizer"]):
        raise CheckpointError(
            f"The checkpoint has modules {sorted(saved['optimizer'])}, this algorithm has modules "
            f"{sorted(learner_state['optimizer'])}: build it with the checkpoint's "
            "config.multi_agent(policies=...), or use Algorithm.from_checkpoint.")
    if _shapes(saved["module"]) != _shapes(learner_state["module"]):
        raise CheckpointError(
            f"The checkpoint's network differs from this algorithm's: its weights are "
            f"{_shapes(saved['module'])}, here {_shapes(learner_state['module'])}. " + model)
    optimizers = (saved["optimizer"], learner_state["optimizer"])
    if "param_groups" in optimizers[1]:
        _check_optimizer(*optimizers, model)
    else:
        for module_id, current in optimizers[1].items():
            _check_optimizer(optimizers[0][module_id], current, model)
    if _shapes(saved)["torch_rng"] != _shapes(learner_state)["torch_rng"]:
        raise CheckpointError("The checkpoint's torch RNG state has another size than this torch's.")
    _check_runners(state["env_runners"], runner_layers, "EnvRunner")
    if state.get("evaluation_env_runners") is not None and eval_runner_layers is not None:
        _check_runners(state["evaluation_env_runners"], eval_runner_layers, "Evaluation EnvRunner")


def _check_runners(runners: list[dict], runner_layers: list[list[int] | None], what: str) -> None:
    if len(runners) != len(runner_layers):
        return  # another number of runners: EnvRunnerGroup.set_state restarts episodes instead
    for i, (runner, layers) in enumerate(zip(runners, runner_layers, strict=True)):
        envs = runner["episodes"]["envs"] if runner.get("episodes") else runner.get("envs")
        if envs is None or layers is None:
            continue
        saved_layers = [len(env) for env in envs]
        if saved_layers != layers:
            raise CheckpointError(
                f"{what} {i} of the checkpoint has sub-envs with {saved_layers} layers (env and "
                f"wrappers), this algorithm's have {layers}: check num_envs_per_env_runner and "
                "restart_failed_sub_environments, which must be as when it was saved.")


def _check_optimizer(saved: dict[str, Any], current: dict[str, Any], fix: str) -> None:
    """Same parameter groups and parameter counts (what torch checks), and each parameter's saved
    moments shaped as the moments this optimizer holds (torch does not check that: a mismatch
    would fail at the next update). A fresh optimizer holds none yet; then the module check above
    already compared the parameters' shapes."""
    groups = [len(group["params"]) for group in saved["param_groups"]]
    if groups != [len(group["params"]) for group in current["param_groups"]]:
        raise CheckpointError(f"The checkpoint's optimizer has parameter groups of sizes {groups}, "
                              "this algorithm's differ. " + fix)
    for index, slots in saved["state"].items():
        mine = current["state"].get(index)
        if mine is not None and _shapes(slots) != _shapes(mine):
            raise CheckpointError(f"The checkpoint's optimizer state for parameter {index} has "
                                  f"shapes {_shapes(slots)}, this algorithm's {_shapes(mine)}. " + fix)
