"""An env's state as plain data, so a checkpoint continues episodes exactly where they were.

A gymnasium env keeps its state in attributes (CartPole's `state`, TimeLimit's `_elapsed_steps`,
`_np_random`): the env's and each wrapper's attributes that hold plain data (serialization.py: no
pickle, so loading a checkpoint never runs code) are saved; the constructor rebuilds the rest (spaces,
renderers, handles). An env can define `get_state() -> dict` and `set_state(dict)` instead.
"""

import contextlib
from typing import Any

import gymnasium as gym

from rlcourse.utils.serialization import NotPlainData, from_plain, to_plain


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
            if name == "env":
                continue
            with contextlib.suppress(NotPlainData):
                state[name] = to_plain(value)
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
            continue
        for name, value in state.items():
            setattr(layer, name, from_plain(value))
