"""An env's state as plain data, so a checkpoint continues episodes exactly where they were: the
attributes of the env and each wrapper that hold plain data (CartPole's `state`, TimeLimit's
`_elapsed_steps`, `_np_random`; serialization.py, no pickle) are saved, the constructor rebuilds the
rest (spaces, renderers). An env can define `get_state() -> dict` and `set_state(dict)` instead."""

import contextlib
from typing import Any

import gymnasium as gym
import numpy as np

from rlcourse.utils.checkpoints import CheckpointError
from rlcourse.utils.serialization import NotPlainData, from_plain, to_plain
from rlcourse.utils.state_values import check_like, decode


def wrapper_layers(env: gym.Env) -> list[gym.Env]:
    """The env and each wrapper around it, outermost first."""
    layers = [env]
    while isinstance(layers[-1], gym.Wrapper):
        layers.append(layers[-1].env)
    return layers


def get_env_state(env: gym.Env) -> list[dict[str, Any]]:
    """Plain-data state of each layer of `env` (outermost wrapper first), JSON-compatible."""
    states = []
    for layer in wrapper_layers(env):
        if hasattr(type(layer), "get_state") and hasattr(type(layer), "set_state"):
            states.append({"__custom__": to_plain(layer.get_state())})
            continue
        state = {}
        for name, value in vars(layer).items():
            with contextlib.suppress(NotPlainData):
                state[name] = to_plain(value)  # a wrapper's `env` is not plain data
        states.append(state)
    return states


def set_env_state(env: gym.Env, states: list[dict[str, Any]]) -> None:
    """Put the state from `get_env_state` back into an env built the same way."""
    layers = wrapper_layers(env)
    if len(layers) != len(states):
        raise ValueError(f"The saved env state has {len(states)} layers (env and wrappers), but this "
                         f"env has {len(layers)}: it was built differently from the saved one.")
    for layer, state in zip(layers, states, strict=True):
        if "__custom__" in state:
            layer.set_state(from_plain(state["__custom__"]))
        else:
            for name, value in state.items():
                setattr(layer, name, from_plain(value))


def check_env_state(env: gym.Env, states: Any, where: str) -> None:
    """Refuse a saved `get_env_state` that `set_env_state` would take as it is: another number of
    layers, a name of the layer's methods or properties (it would be set over them), an attribute
    of another type than the env's, arrays of another dtype or shape, NaN where the env's values
    are finite (or unset). A layer with its own get_state / set_state checks its state itself."""
    current = get_env_state(env)
    if not isinstance(states, list) or len(states) != len(current):
        raise CheckpointError(f"{where} must be a list of {len(current)} layers' states.")
    for i, (saved, mine) in enumerate(zip(states, current, strict=True)):
        here = f"{where}[{i}]"
        if not isinstance(saved, dict) or ("__custom__" in saved) != ("__custom__" in mine):
            raise CheckpointError(f"{here} must be a dict of attributes, as get_env_state saves.")
        layer = wrapper_layers(env)[i]
        methods = [name for name in saved if name != "__custom__" and (
            name.startswith("__") or hasattr(getattr(type(layer), name, None), "__get__"))]
        if methods:  # set_env_state would set them over the class's methods or properties
            raise CheckpointError(f"{here} names {sorted(methods)}, methods or properties of "
                                  f"{type(layer).__name__}, not its data.")
        for name, value in saved.items() if "__custom__" not in mine else ():
            _check_attribute(decode(value, f"{here}.{name}"), from_plain(mine.get(name)),
                             f"{here}.{name}")


def _check_attribute(saved: Any, current: Any, where: str) -> None:
    if current is None and isinstance(saved, np.ndarray | float):  # e.g. before the first reset
        current = np.zeros_like(saved) if isinstance(saved, np.ndarray) else 0.0
    if saved is None or current is None:
        return
    if type(saved) is not type(current) and not (
            isinstance(saved, int | float) and isinstance(current, int | float)
            and not isinstance(saved, bool) and not isinstance(current, bool)):
        raise CheckpointError(f"{where} is a {type(saved).__name__}, the env's a "
                              f"{type(current).__name__}.")
    if isinstance(current, np.ndarray | float):
        check_like(saved, current, where)
