"""Checks of what torch would load unchecked from a saved Learner state (an optimizer's moments,
steps and settings; torch's random state), run by Learner.check_state before a restore: else a bad
value shows only in a later update (NaN weights, a crash) or, for settings, never."""

from typing import Any

import torch

from rlcourse.utils.checkpoints import CheckpointError

# Hyperparameters a restore does not take from the checkpoint (Learner.set_state sets this config's).
NOT_RESTORED = {"params", "lr", "initial_lr"}


def check_optimizer_state(saved: Any, optimizer: torch.optim.Optimizer, where: str) -> None:
    """`optimizer.state_dict()`'s form with this optimizer's settings (but the learning rate), and
    per parameter finite moments of the parameter's shape and dtype, squared ones and steps >= 0."""
    current = optimizer.state_dict()
    if not isinstance(saved, dict) or not isinstance(saved.get("state"), dict):
        raise CheckpointError(f"{where} must be an optimizer state dict.")
    groups = saved.get("param_groups")
    if not isinstance(groups, list) or len(groups) != len(current["param_groups"]):
        raise CheckpointError(f"{where}.param_groups must be a list of "
                              f"{len(current['param_groups'])} parameter groups.")
    for i, (group, mine) in enumerate(zip(groups, current["param_groups"], strict=True)):
        if not isinstance(group, dict) or group.get("params") != mine["params"]:
            raise CheckpointError(f"{where}.param_groups[{i}].params must be {mine['params']}.")
        if missing := sorted(mine.keys() - group.keys() - NOT_RESTORED):  # (torch would take it)
            raise CheckpointError(f"{where}.param_groups[{i}] has no {missing[0]!r}, which this "
                                  "config's optimizer has: the file was edited.")
        for key in sorted(group.keys() & mine.keys() - NOT_RESTORED):
            if group[key] != mine[key]:
                raise CheckpointError(
                    f"{where}.param_groups[{i}].{key} is {group[key]!r}, this config's optimizer "
                    f"has {mine[key]!r}: a restore keeps the optimizer's settings but the lr.")
    params = [p for group in optimizer.param_groups for p in group["params"]]
    for index, slots in saved["state"].items():
        here = f"{where}.state[{index!r}]"
        if not isinstance(index, int) or not 0 <= index < len(params) or not isinstance(slots, dict):
            raise CheckpointError(f"{here}: no parameter {index!r} (this optimizer has "
                                  f"{len(params)}), or not a dict of tensors.")
        if index in current["state"] and set(slots) != set(current["state"][index]):
            raise CheckpointError(f"{here} holds {sorted(slots)}; this optimizer keeps "
                                  f"{sorted(current['state'][index])} per parameter.")
        for name, value in slots.items():
            _check_slot(value, params[index], name, f"{here}[{name!r}]")


def _check_slot(value: Any, param: torch.Tensor, name: str, where: str) -> None:
    if not isinstance(value, torch.Tensor) or not value.is_floating_point():
        raise CheckpointError(f"{where} must be a float tensor.")
    if name != "step" and (value.shape != param.shape or value.dtype != param.dtype):
        raise CheckpointError(f"{where} has shape {tuple(value.shape)} and dtype {value.dtype}; "
                              f"its parameter {tuple(param.shape)} and {param.dtype}.")
    if not torch.isfinite(value).all():
        raise CheckpointError(f"{where} holds NaN or infinite values.")
    if (name == "step" or name.endswith("_sq")) and (value < 0).any():
        raise CheckpointError(f"{where} holds negative values (a step count or squared moment).")


def check_torch_rng(saved: Any, where: str) -> None:
    """A state torch.set_rng_state takes (tried, then torch's own state is put back)."""
    current = torch.get_rng_state()
    if (not isinstance(saved, torch.Tensor) or saved.dtype != current.dtype
            or saved.shape != current.shape):
        raise CheckpointError(f"{where} must be a {current.dtype} tensor of shape "
                              f"{tuple(current.shape)}, as torch.get_rng_state() returns.")
    try:
        torch.set_rng_state(saved)
    except (RuntimeError, ValueError, TypeError) as e:
        raise CheckpointError(f"{where} is not a state torch's generator takes: {e}") from None
    finally:
        torch.set_rng_state(current)

