"""The values of a checkpoint's state.json, checked for type, sign, shape and finiteness before a
restore applies any: its SHA-256s catch damage, not edits by someone who recomputes them. Errors
name the field; restore_from_path and from_checkpoint add the checkpoint's path."""

from typing import Any

import numpy as np

from rlcourse.utils.checkpoints import CheckpointError
from rlcourse.utils.state_values import check_counter, decode, is_count


def check_counters(state: dict[str, Any]) -> None:
    """The Algorithm's counters (EpisodeStats checks its own) and each runner's step count."""
    counters = state["algorithm"]
    if not isinstance(counters, dict):
        raise CheckpointError("algorithm is not a dict.")
    for key in ("iteration", "num_env_steps_trained_lifetime"):
        check_counter(counters.get(key), f"algorithm.{key}")
    seq_no = counters.get("weights_seq_no")
    if seq_no is not None and not (is_count(seq_no) or seq_no == -1):
        raise CheckpointError(f"algorithm.weights_seq_no is {seq_no!r}; expected an int >= -1.")
    for group in ("env_runners", "evaluation_env_runners"):
        runners = state.get(group) or []  # evaluation_env_runners: None before any evaluation
        if not isinstance(runners, list) or not all(isinstance(r, dict) for r in runners):
            raise CheckpointError(f"{group} must be a list of dicts.")
        for i, runner in enumerate(runners):
            check_counter(runner.get("num_env_steps_lifetime"),
                          f"{group}[{i}].num_env_steps_lifetime")


def check_filter_states(state: dict[str, Any], current: list[dict[str, Any]]) -> None:
    """The connectors' saved statistics (MeanStdFilter's count, mean and sum of squared deviations,
    merged and each runner's): finite, a variance >= 0, of the shape this algorithm's filters have."""
    places = [("algorithm.env_to_module_state", state["algorithm"].get("env_to_module_state"))]
    for group in ("env_runners", "evaluation_env_runners"):
        places += [(f"{group}[{i}].env_to_module", runner.get("env_to_module"))
                   for i, runner in enumerate(state.get(group) or [])]
    for where, saved in places:
        if saved is None:
            continue
        if not isinstance(saved, list) or not all(isinstance(s, dict) for s in saved):
            raise CheckpointError(f"{where} must be a list of each connector's state (dicts).")
        for k, connector in enumerate(saved):
            mine = current[k].get("running_stats") if k < len(current) else None
            shape = None if mine is None else np.shape(decode(mine["mean"], where))
            for name in ("running_stats", "buffer"):
                if name in connector:
                    _check_running_stat(connector[name], f"{where}[{k}].{name}", shape)


def _check_running_stat(stat: Any, where: str, shape: tuple | None) -> None:
    if not isinstance(stat, dict) or set(stat) != {"n", "mean", "m2"}:
        raise CheckpointError(f"{where} must be a dict with keys n, mean and m2.")
    check_counter(stat["n"], f"{where}.n")
    for key in ("mean", "m2"):
        value = decode(stat[key], f"{where}.{key}")
        if not isinstance(value, np.ndarray) or value.dtype.kind != "f":
            raise CheckpointError(f"{where}.{key} is not a float array.")
        if shape is not None and value.shape != shape:
            raise CheckpointError(f"{where}.{key} has shape {value.shape}, this algorithm's "
                                  f"observations {shape}.")
        if not np.isfinite(value).all() or (key == "m2" and (value < 0).any()):
            raise CheckpointError(f"{where}.{key} holds NaN, infinite or (a variance) negative "
                                  "values.")


def check_model_config(saved: Any, current: dict[str, Any]) -> None:
    """The settings both model_configs have must agree: an activation changes no weight's shape."""
    if not isinstance(saved, dict):
        return  # None, or a custom class's settings: the weights' shapes are checked
    for key in sorted(saved.keys() & current.keys()):
        if saved[key] != current[key]:
            raise CheckpointError(
                f"config.model_config[{key!r}] is {saved[key]!r} in the checkpoint, "
                f"{current[key]!r} here. Build the algorithm with the checkpoint's model_config, "
                "or use Algorithm.from_checkpoint.")
