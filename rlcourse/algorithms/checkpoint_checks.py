"""Whether a checkpoint fits the Algorithm it is restored into, checked before the restore changes
anything, so that a mismatch leaves the algorithm as it was (Checkpointable.set_state)."""

from typing import Any

from rlcourse.env.env_state import wrapper_layers
from rlcourse.utils.checkpoint_contents import names_class
from rlcourse.utils.checkpoints import CheckpointError
from rlcourse.utils.imports import class_path

# The bit generators numpy's Generator state may name (utils/serialization.from_plain calls it).
BIT_GENERATORS = {"PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64"}


def check_plain_data(value: Any, where: str) -> None:
    """Refuse random-generator states that name anything but a numpy bit generator."""
    if isinstance(value, dict):
        if "__generator__" in value:
            state = value["__generator__"]
            name = state.get("bit_generator") if isinstance(state, dict) else None
            if name not in BIT_GENERATORS:
                raise CheckpointError(f"{where}: a random generator state names bit_generator "
                                      f"{name!r}; expected one of {sorted(BIT_GENERATORS)}.")
        value = list(value.values())
    if isinstance(value, list):
        for item in value:
            check_plain_data(item, where)


def env_layers(runner: Any) -> list[int] | None:
    """Each sub-env's number of layers (env and wrappers); None for ASYNC sub-envs (not restored)."""
    envs = getattr(getattr(runner, "env", None), "envs", None)  # a MultiAgentEnvRunner has no env
    return None if envs is None else [len(wrapper_layers(env)) for env in envs]


def _shapes(tensors: dict[str, Any]) -> dict[str, tuple]:
    return {key: tuple(getattr(value, "shape", ())) for key, value in tensors.items()}


def check_restorable(state: dict[str, Any], tensors: dict[str, Any], config: Any,
                     learner_state: dict[str, Any], runner_layers: list[list[int] | None],
                     eval_runner_layers: list[list[int] | None] | None = None) -> None:
    """Raise CheckpointError unless the checkpoint fits: everything a restore could fail on halfway."""
    name = str(state.get("config", {}).get("config_class", ""))
    if not names_class(name, type(config)):
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
    if not isinstance(saved["module"], dict) or not isinstance(saved["optimizer"], dict):
        raise CheckpointError("learner.pt: module and optimizer must be dicts, as torch saves them.")
    model = "Build the algorithm with the checkpoint's model_config, or use Algorithm.from_checkpoint."
    saved_optimizers, optimizers = saved["optimizer"], learner_state["optimizer"]
    if "param_groups" in optimizers:  # single-agent: one optimizer, else one per module
        saved_optimizers, optimizers = {"": saved_optimizers}, {"": optimizers}
    elif set(saved_optimizers) != set(optimizers):
        raise CheckpointError(
            f"The checkpoint has modules {sorted(saved_optimizers)}, this algorithm has modules "
            f"{sorted(optimizers)}: build it with the checkpoint's "
            "config.multi_agent(policies=...), or use Algorithm.from_checkpoint.")
    if _shapes(saved["module"]) != _shapes(learner_state["module"]):
        raise CheckpointError(
            f"The checkpoint's network differs from this algorithm's: its weights are "
            f"{_shapes(saved['module'])}, here {_shapes(learner_state['module'])}. " + model)
    for module_id, current in optimizers.items():
        _check_optimizer(saved_optimizers[module_id], current, model)
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
    """Same parameter groups and counts (torch checks those), and saved moments shaped as this
    optimizer's (torch does not: a mismatch would fail at the next update)."""
    if not (isinstance(saved, dict) and isinstance(saved.get("state"), dict)
            and isinstance(saved.get("param_groups"), list)
            and all(isinstance(g, dict) and isinstance(g.get("params"), list)
                    for g in saved["param_groups"])):
        raise CheckpointError("learner.pt: an optimizer's state is not torch's state_dict (a dict "
                              "of param_groups, each with a list of params, and state).")
    groups = [len(group["params"]) for group in saved["param_groups"]]
    if groups != [len(group["params"]) for group in current["param_groups"]]:
        raise CheckpointError(f"The checkpoint's optimizer has parameter groups of sizes {groups}, "
                              "this algorithm's differ. " + fix)
    for index, slots in saved["state"].items():
        mine = current["state"].get(index)
        if mine is not None and isinstance(slots, dict) and _shapes(slots) != _shapes(mine):
            raise CheckpointError(f"The checkpoint's optimizer state for parameter {index} has "
                                  f"shapes {_shapes(slots)}, this algorithm's {_shapes(mine)}. " + fix)
