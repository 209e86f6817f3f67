"""The values of a checkpoint's state.json that no part of the Algorithm owns (its counters, the
model_config), checked before a restore applies any: its SHA-256s catch damage, not edits by someone
who recomputes them. Errors name the field; restore_from_path and from_checkpoint add the path."""

from typing import Any

from rlcourse.utils.checkpoints import CheckpointError
from rlcourse.utils.state_values import check_counter, is_count


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
