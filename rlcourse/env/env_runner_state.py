"""What an EnvRunner saves and how a saved state is checked. Its envs' state is plain data (the
attributes of the env and each wrapper that hold plain data, CartPole's `state`, TimeLimit's
`_elapsed_steps`, `_np_random`; serialization.py, no pickle), so a checkpoint continues episodes
exactly; an env can define `get_state() -> dict` and `set_state(dict)` instead. A saved state is
checked in the runner's process before it takes any, so an edited checkpoint is refused at restore,
naming the field (connectors check theirs: ConnectorV2)."""

import contextlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from rlcourse.utils.checkpoints import CheckpointError
from rlcourse.utils.serialization import NotPlainData, from_plain, to_plain
from rlcourse.utils.state_values import (
    check_array,
    check_counter,
    check_generator,
    check_like,
    check_numbers,
    decode,
)

if TYPE_CHECKING:
    from rlcourse.env.single_agent_env_runner import SingleAgentEnvRunner

EPISODE_KEYS = {"obs", "ids", "t_started", "running_returns", "envs", "hooks"}  # no hooks: older
HOOK_KEYS = {"custom_data", "observations", "actions", "rewards"}


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


def check_step_count(state: Any, where: str) -> None:
    """What every runner saves: a dict with its lifetime env-step count."""
    if not isinstance(state, dict):
        raise CheckpointError(f"{where} must be a dict.")
    check_counter(state.get("num_env_steps_lifetime"), f"{where}.num_env_steps_lifetime")


def check_module_rngs(state: dict, module_ids: Iterable[str], where: str) -> None:
    """A MultiAgentEnvRunner's: one random generator per module."""
    rngs, module_ids = state.get("module_rngs"), sorted(module_ids)
    if not isinstance(rngs, dict) or not set(rngs) <= set(module_ids):
        raise CheckpointError(f"{where}.module_rngs must be a dict of this runner's modules "
                              f"{module_ids}.")
    for mid, rng in rngs.items():
        check_generator(rng, f"{where}.module_rngs[{mid!r}]")


def check_runner_state(runner: "SingleAgentEnvRunner", state: dict, where: str) -> None:
    """A SingleAgentEnvRunner's saved state, against `runner` (which it leaves as it is)."""
    if missing := sorted({"module_rng", "episodes"} - set(state)):  # (None: none saved, as is)
        raise CheckpointError(f"{where} has no {missing[0]!r}: the file was edited, or is not "
                              "an rlcourse checkpoint.")
    if state["module_rng"] is not None:
        check_generator(state["module_rng"], f"{where}.module_rng")
    if runner.env_to_module is not None:
        runner.env_to_module.check_state(state.get("env_to_module"), f"{where}.env_to_module")
    envs = getattr(runner.env, "envs", None)
    if envs is None:  # ASYNC sub-envs, whose state is not restored
        return
    episodes = state.get("episodes")
    saved_envs, here = ((episodes.get("envs"), f"{where}.episodes.envs")
                        if isinstance(episodes, dict) and episodes
                        else (state.get("envs"), f"{where}.envs"))
    if saved_envs is not None:  # first, as another number of sub-envs shows everywhere
        if not isinstance(saved_envs, list) or not all(isinstance(e, list) for e in saved_envs):
            raise CheckpointError(f"{here} must be a list of {len(envs)} sub-envs' states.")
        if len(saved_envs) != len(envs):
            raise CheckpointError(f"{here}: the checkpoint has {len(saved_envs)} sub-envs, this "
                                  f"runner {len(envs)}: set num_envs_per_env_runner as it was saved.")
        layers = [len(wrapper_layers(env)) for env in envs]
        if [len(env) for env in saved_envs] != layers:
            raise CheckpointError(
                f"{here}: the checkpoint has sub-envs with {[len(e) for e in saved_envs]} layers "
                f"(env and wrappers), this runner's have {layers}: check num_envs_per_env_runner "
                "and restart_failed_sub_environments, which must be as when it was saved.")
        for i, (env, saved) in enumerate(zip(envs, saved_envs, strict=True)):
            check_env_state(env, saved, f"{here}[{i}]")
    if episodes is not None:
        _check_episodes(runner, episodes, len(envs), f"{where}.episodes")


def _check_episodes(runner: "SingleAgentEnvRunner", episodes: Any, n: int, where: str) -> None:
    """The running episodes: one per sub-env, the observations the module acts on next."""
    # "module_state": a stateful module's state per sub-env (use_lstm), saved with its episodes.
    if not isinstance(episodes, dict) or set(episodes) - {"module_state"} not in (
            EPISODE_KEYS, EPISODE_KEYS - {"hooks"}):
        raise CheckpointError(f"{where} must be a dict with keys {sorted(EPISODE_KEYS)}.")
    for key in ("ids", "t_started", "running_returns"):
        if not isinstance(episodes[key], list) or len(episodes[key]) != n:
            raise CheckpointError(f"{where}.{key} must be a list of {n} (one per sub-env).")
    if not all(isinstance(i, str) for i in episodes["ids"]):
        raise CheckpointError(f"{where}.ids must be strings.")
    for i, t in enumerate(episodes["t_started"]):
        check_counter(t, f"{where}.t_started[{i}]")
    check_numbers(episodes["running_returns"], f"{where}.running_returns")
    ours = {"obs": runner._obs}  # once it has sampled, its own values are the reference
    if runner.module.is_stateful:
        if "module_state" not in episodes:
            raise CheckpointError(f"{where} has no module_state (the LSTM's state per sub-env).")
        ours["module_state"] = runner.module.state
    for key, current in ours.items():
        value = decode(episodes[key], f"{where}.{key}")
        if current is not None:
            check_like(value, current, f"{where}.{key}")
        else:
            check_array(value, f"{where}.{key}", rows=n)
    hooks = episodes.get("hooks")  # None: no episode hooks configured
    if hooks is not None and (not isinstance(hooks, list) or len(hooks) != n):
        raise CheckpointError(f"{where}.hooks must be a list of {n} running episodes.")
    for i, episode in enumerate(hooks or ()):
        here = f"{where}.hooks[{i}]"
        if not isinstance(episode, dict) or set(episode) != HOOK_KEYS:
            raise CheckpointError(f"{here} must be a dict with keys {sorted(HOOK_KEYS)}.")
        check_numbers(episode["rewards"], f"{here}.rewards")
        for key in ("observations", "actions"):
            for t, value in enumerate(decode(episode[key], f"{here}.{key}")):
                check_array(value, f"{here}.{key}[{t}]")
        decode(episode["custom_data"], f"{here}.custom_data")
