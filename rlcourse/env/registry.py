"""Where environments come from: gymnasium ids, `register_env` names, or env classes.

The driver resolves the creator once and ships it to each EnvRunner actor when the actor is built,
so a name registered in a notebook works on every runner (they do not share this module's dict).
"""

import inspect
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from rlcourse.env.env_context import EnvContext

EnvCreator = Callable[[EnvContext], gym.Env]

_REGISTRY: dict[str, EnvCreator] = {}


def register_env(name: str, env_creator: EnvCreator) -> None:
    """Register `env_creator(env_context) -> gym.Env` under `name`, as RLlib's `register_env` does."""
    if not callable(env_creator):
        raise TypeError(f"register_env({name!r}, ...): the creator must be callable, "
                        f"got {type(env_creator).__name__}.")
    _REGISTRY[name] = env_creator


def _make_gym_id(env_id: str) -> EnvCreator:
    def creator(ctx: EnvContext) -> gym.Env:
        return gym.make(env_id, **ctx)
    return creator


def _make_class(env_cls: type) -> EnvCreator:
    try:
        inspect.signature(env_cls).bind(EnvContext({}))
    except TypeError:
        raise ValueError(f"{env_cls.__name__} is built as {env_cls.__name__}(env_config), with the "
                         "EnvContext: give its __init__ a config argument, e.g. "
                         "def __init__(self, config=None).") from None

    def creator(ctx: EnvContext) -> gym.Env:
        return env_cls(ctx)
    return creator


def get_env_creator(env: Any) -> EnvCreator:
    """Resolve the `env` setting of `AlgorithmConfig.environment()` to a creator function."""
    if isinstance(env, str):
        if env in _REGISTRY:
            return _REGISTRY[env]
        try:
            gym.spec(env)
        except gym.error.Error as e:
            raise ValueError(
                f"no env is registered under this name ({e}). Use a gymnasium id such as "
                f"'CartPole-v1', call rlcourse.register_env({env!r}, creator) first, or pass a "
                "gymnasium.Env subclass.") from None
        return _make_gym_id(env)
    if isinstance(env, type) and issubclass(env, gym.Env):
        return _make_class(env)
    if callable(env):
        return env
    raise ValueError("expected a gymnasium id, a name given to register_env, a gymnasium.Env "
                     "subclass, or a creator function.")


def env_name(env: Any) -> str:
    """How error messages name the `env` setting: its gymnasium id or registered name, or the name
    of its class or creator function."""
    return env if isinstance(env, str) else getattr(env, "__name__", type(env).__name__)


def probe_spaces(env_creator: EnvCreator, env_config: dict) -> tuple[gym.Space, gym.Space]:
    """Build and reset one env in the driver to learn its spaces. A broken env fails here, at
    build_algo(), with its own error, instead of later inside a runner actor."""
    try:
        env = env_creator(EnvContext(env_config))
    except Exception as e:
        raise RuntimeError(f"Creating the env failed: {type(e).__name__}: {str(e).rstrip('.')}. "
                           "Check the env passed to config.environment() and its env_config.") from e
    if not isinstance(env, gym.Env):
        raise TypeError(f"The env creator returned {type(env).__name__}, not a gymnasium.Env.")
    try:
        obs, _ = env.reset(seed=0)
        if not env.observation_space.contains(obs):
            raise ValueError(
                f"The env's reset() returned an observation that is not in its observation_space "
                f"{env.observation_space}: {obs!r} (type {type(obs).__name__}, dtype "
                f"{getattr(obs, 'dtype', '-')}, shape {np.shape(obs)}). Make the two agree, e.g. "
                "return np.array(..., dtype=np.float32) for a float32 Box.")
        return env.observation_space, env.action_space
    finally:
        env.close()
