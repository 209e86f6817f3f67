"""NumPy arrays, scalars and random generators as JSON-compatible values, and back: checkpoints
store state this way, not by pickle, so loading one runs no code."""

import base64
from typing import Any

import numpy as np


class NotPlainData(TypeError):
    """A value that cannot be stored as plain data (e.g. an object with methods and references)."""


def to_plain(value: Any) -> Any:
    """A JSON-compatible form of `value`; raises NotPlainData for anything that is not plain data."""
    if isinstance(value, bool | int | float | str | None):
        return value
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":
        return {"__numpy_scalar__": value.item(), "dtype": value.dtype.str}
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        data = np.ascontiguousarray(value)
        return {"__ndarray__": base64.b64encode(data.tobytes()).decode(), "dtype": data.dtype.str,
                "shape": list(value.shape)}  # ascontiguousarray makes 0-d 1-d
    if isinstance(value, np.random.Generator):
        return {"__generator__": value.bit_generator.state}
    if isinstance(value, list | tuple):
        items = [to_plain(v) for v in value]
        return items if isinstance(value, list) else {"__tuple__": items}
    if isinstance(value, dict) and all(isinstance(k, str) and not k.startswith("__") for k in value):
        return {k: to_plain(v) for k, v in value.items()}
    raise NotPlainData(f"{type(value).__name__} is not plain data")


def from_plain(value: Any) -> Any:
    """The inverse of `to_plain`."""
    if isinstance(value, list):
        return [from_plain(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "__ndarray__" in value:
        data = base64.b64decode(value["__ndarray__"])
        return np.frombuffer(data, dtype=np.dtype(value["dtype"])).reshape(value["shape"]).copy()
    if "__numpy_scalar__" in value:
        return np.dtype(value["dtype"]).type(value["__numpy_scalar__"])
    if "__generator__" in value:
        state = value["__generator__"]
        generator = np.random.Generator(getattr(np.random, state["bit_generator"])())
        generator.bit_generator.state = state
        return generator
    if "__tuple__" in value:
        return tuple(from_plain(v) for v in value["__tuple__"])
    return {k: from_plain(v) for k, v in value.items()}
