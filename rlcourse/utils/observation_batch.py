"""A batch of observations checked once, before a module sees it (`Algorithm.compute_actions`, the
served policy's requests): a ValueError naming where it came from, what is wrong and what to send."""

from typing import Any

import gymnasium as gym
import numpy as np


def observation_batch(value: Any, space: gym.Space, where: str, single: bool = False) -> Any:
    """`value` as an array (B, *space.shape) of finite numbers, B >= 1 (`single`: one observation of
    the space's shape is a batch of one). Spaces other than Box and Discrete: `value` unchecked."""
    if not isinstance(space, gym.spaces.Box | gym.spaces.Discrete):
        return value
    shape = tuple(space.shape)
    try:
        raw = np.asarray(value)
    except ValueError:
        raise ValueError(f"{where} is ragged (rows of different lengths): every observation must "
                         f"have shape {shape}.") from None
    if raw.dtype == object and all(type(x) in (int, float) for x in raw.flat):  # ints past int64
        try:
            raw = raw.astype(np.float64)
        except OverflowError:
            raise ValueError(f"{where} holds a number beyond float64's range.") from None
    if raw.dtype == bool or not np.issubdtype(raw.dtype, np.number):
        kind = "true/false" if raw.dtype == bool else "strings" if raw.dtype.kind == "U" else "objects"
        raise ValueError(f"{where} holds {kind}, not numbers.")
    if raw.ndim and len(raw) == 0:
        raise ValueError(f"{where} is an empty batch: send at least one observation.")
    batch = raw[None] if single and raw.shape == shape else raw
    if batch.ndim == 0 or batch.shape[1:] != shape:
        one = f"{shape} for one observation or " if single else ""
        fix = "" if single else ": for one observation pass obs[None]"
        batch_shape = "(B" + "".join(f", {n}" for n in shape) + ")"
        raise ValueError(f"{where} has shape {raw.shape}; expected {one}{batch_shape} for a batch "
                         f"of B{fix}.")
    finite = np.isfinite(batch).reshape(len(batch), -1).all(axis=1)
    if not finite.all():
        raise ValueError(f"{where} row {int(np.argmin(finite))} holds NaN or infinity: "
                         "observations must be finite numbers.")
    return batch
