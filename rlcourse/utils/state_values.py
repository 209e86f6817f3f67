"""Checks of single saved values (counts, numbers, random generators, observations, tensors) that
each state's owner runs on its part of a checkpoint before taking any of it: the SHA-256s catch
damage, not edits by someone who recomputes them. Errors name the field (`where`)."""

import math
from typing import Any

import gymnasium as gym
import numpy as np

from rlcourse.utils.checkpoints import CheckpointError
from rlcourse.utils.serialization import from_plain


def is_count(value: Any) -> bool:
    """An int >= 0 (not a bool)."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool) and value >= 0


def _is_number(value: Any) -> bool:
    """A finite int or float (not a bool)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def decode(value: Any, where: str) -> Any:
    """`from_plain(value)`, with any decoding error reported as the field's."""
    try:
        return from_plain(value)
    except Exception as e:  # a bad dtype, shape or byte count: numpy's errors name no field
        raise CheckpointError(f"{where} cannot be decoded: {e}") from None


def check_counter(value: Any, where: str, number: bool = False) -> None:
    """An int >= 0 (`number`: any finite number >= 0)."""
    if not (is_count(value) or number and _is_number(value) and value >= 0):
        kind = "a finite number" if number else "an int"
        raise CheckpointError(f"{where} is {value!r}; expected {kind} >= 0.")


def check_number(value: Any, where: str, low: float = -math.inf) -> None:
    """A finite number (not a bool) >= `low`."""
    if not (_is_number(value) and value >= low):
        raise CheckpointError(f"{where} is {value!r}; expected a finite number >= {low}.")


def check_numbers(values: Any, where: str) -> None:
    """A list of finite numbers (returns, rewards)."""
    if not isinstance(values, list) or not all(map(_is_number, values)):
        raise CheckpointError(f"{where} must be a list of finite numbers.")


def check_generator(value: Any, where: str) -> None:
    """A numpy random generator's saved state (to_plain's) that builds a generator."""
    if not (isinstance(value, dict) and "__generator__" in value
            and isinstance(decode(value, where), np.random.Generator)):
        raise CheckpointError(f"{where} is not a saved numpy random generator.")


def check_array(value: Any, where: str, kinds: str = "biuf", ndim: int | None = None,
                rows: int | None = None) -> np.ndarray:
    """A finite array (a number: 0-d) of dtype kind in `kinds`, with `ndim` dimensions and `rows`
    rows where given; returned as an array."""
    array = np.asarray(value) if isinstance(value, np.ndarray | np.generic | int | float) else None
    if array is None or array.dtype.kind not in kinds:
        raise CheckpointError(f"{where} is not a numeric array (dtype kind in {kinds!r}).")
    if (ndim is not None and array.ndim != ndim
            or rows is not None and (array.ndim == 0 or len(array) != rows)):
        expected = ", ".join(f"{n} {what}" for n, what in ((ndim, "dimensions"), (rows, "rows"))
                             if n is not None)
        raise CheckpointError(f"{where} has shape {array.shape}; expected {expected}.")
    if not np.isfinite(array).all():
        raise CheckpointError(f"{where} holds NaN or infinite values.")
    return array


def check_in_space(values: np.ndarray, space: gym.Space, where: str) -> None:
    """A batch of saved observations or actions of `space` (Discrete or Box; others unchecked)."""
    if not isinstance(values, np.ndarray):
        raise CheckpointError(f"{where} is not an array.")
    if isinstance(space, gym.spaces.Discrete):
        ok = (values.dtype.kind in "iu" and values.ndim == 1
              and ((values >= space.start) & (values < space.start + space.n)).all())
    elif isinstance(space, gym.spaces.Box):
        ok = (values.dtype.kind in "biuf" and values.shape[1:] == space.shape
              and bool(np.isfinite(values).all())
              and bool(((values >= space.low) & (values <= space.high)).all()))
    else:
        return
    if not ok:
        raise CheckpointError(f"{where} holds values outside this algorithm's space {space} (or of "
                              "another shape).")


def check_like(saved: Any, current: Any, where: str) -> None:
    """`saved` has `current`'s structure (dict keys, list lengths), and each array or tensor in it
    `current`'s dtype and shape, finite where `current` is; a number is finite where `current` is."""
    if isinstance(current, dict):
        if not isinstance(saved, dict) or set(saved) != set(current):
            raise CheckpointError(f"{where} must be a dict with keys {sorted(current, key=str)}.")
        for key in current:
            check_like(saved[key], current[key], f"{where}[{key!r}]")
    elif isinstance(current, list | tuple):
        if not isinstance(saved, list | tuple) or len(saved) != len(current):
            raise CheckpointError(f"{where} must be a list of {len(current)} items.")
        for i, (s, c) in enumerate(zip(saved, current, strict=True)):
            check_like(s, c, f"{where}[{i}]")
    elif hasattr(current, "dtype") and hasattr(current, "shape"):  # a tensor or an array
        if (type(saved) is not type(current) or saved.dtype != current.dtype
                or tuple(saved.shape) != tuple(current.shape)):
            raise CheckpointError(f"{where} must be a {type(current).__name__} of dtype "
                                  f"{current.dtype} and shape {tuple(current.shape)}.")
        if _finite(current) and not _finite(saved):
            raise CheckpointError(f"{where} holds NaN or infinite values.")
    elif isinstance(current, float | int) and not isinstance(current, bool) and (
            not isinstance(saved, float | int) or isinstance(saved, bool)
            or math.isfinite(current) and not math.isfinite(saved)):
        raise CheckpointError(f"{where} is {saved!r}; expected a finite number.")


def _finite(value: Any) -> bool:
    """Whether an array's or tensor's values are all finite (integers are)."""
    if value.dtype.kind in "biu" if isinstance(value, np.ndarray) else not value.is_floating_point():
        return True
    return bool((value == value).all() and (abs(value) != math.inf).all())
