"""Where environments come from: gymnasium ids, `register_env` names, or env classes. The driver
resolves the creator and ships it to each runner actor: a name registered in a notebook works there."""

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


def is_registered(name: str) -> bool:
    """Whether `register_env` was called with `name` in this process."""
    return name in _REGISTRY


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
        return lambda ctx: gym.make(env, **ctx)
    if isinstance(env, type) and issubclass(env, gym.Env):
        try:
            inspect.signature(env).bind(EnvContext({}))
        except TypeError:
            raise ValueError(f"{env.__name__} is built as {env.__name__}(env_config), with the "
                             "EnvContext: give its __init__ a config argument, e.g. "
                             "def __init__(self, config=None).") from None
    if callable(env):
        return env  # a creator function, or an env class: called with the EnvContext
    raise ValueError("expected a gymnasium id, a name given to register_env, a gymnasium.Env "
                     "subclass, or a creator function.")


def env_name(env: Any) -> str:
    """How error messages name the `env` setting: its id or registered name, or its class's or
    function's name."""
    return env if isinstance(env, str) else getattr(env, "__name__", type(env).__name__)


def probe_spaces(env_creator: EnvCreator, env_config: dict, name: str = "the env"
                 ) -> tuple[gym.Space, gym.Space]:
    """Build, reset and step one env in the driver to learn its spaces and check gymnasium's API, so
    a broken env fails at build_algo() with its own error, not later inside a runner actor."""
    try:
        env = env_creator(EnvContext(env_config))
    except Exception as e:
        raise RuntimeError(f"Creating the env failed: {type(e).__name__}: {str(e).rstrip('.')}. "
                           "Check the env passed to config.environment() and its env_config.") from e
    # A MultiAgentEnv, rlcourse's (multi_agent_env.py imports this module) or RLlib's:
    if "MultiAgentEnv" in {c.__name__ for c in type(env).__mro__}:
        raise TypeError(f"Env {name!r} is a MultiAgentEnv: configure its agents' modules with "
                        "config.multi_agent(policies=..., policy_mapping_fn=...), e.g. policies="
                        "{'shared'}, policy_mapping_fn=lambda agent_id, episode, **kw: 'shared'.")
    if not isinstance(env, gym.Env):
        raise TypeError(f"The env creator returned {type(env).__name__}, not a gymnasium.Env.")
    with env:  # closed however the probe ends
        for kind in ("observation_space", "action_space"):
            if not isinstance(space := getattr(env, kind, None), gym.Space):
                raise TypeError(f"Env {name!r} has {kind} {space!r}, not a gymnasium space: set "
                                f"self.{kind} = gym.spaces.Box(...) (or Discrete(n), ...) in its "
                                "__init__.")
        result = _probe_reset(env, name)
        if not (isinstance(result, tuple) and len(result) == 2):
            raise _old_api_error(name, f"reset() returned {_describe(result)} instead of (obs, info)")
        obs, info = result
        if not isinstance(info, dict):
            raise TypeError(f"Env {name!r}: reset() returned info {info!r}, not a dict: return "
                            "(obs, info) with a dict, e.g. return obs, {}.")
        if not env.observation_space.contains(obs):
            raise ValueError(
                f"The env's reset() returned an observation that is not in its observation_space "
                f"{env.observation_space}: {obs!r} (type {type(obs).__name__}, dtype "
                f"{getattr(obs, 'dtype', '-')}, shape {np.shape(obs)}). Make the two agree, e.g. "
                "return np.array(..., dtype=np.float32) for a float32 Box.")
        try:
            result = env.step(env.action_space.sample())
        except Exception:  # an env that fails now and then is the runners' business
            return env.observation_space, env.action_space  # (restart_failed_sub_environments)
        if not (isinstance(result, tuple) and len(result) == 5):
            raise _old_api_error(name, f"step() returned {_describe(result)} instead of 5 values")
        _check_step_values(name, *result[1:])
        return env.observation_space, env.action_space


def _probe_reset(env: gym.Env, name: str) -> Any:
    """`env.reset(seed=0, options=None)`, as gymnasium's vector envs call it; whether the env
    follows the old gym API is read from reset's signature, so other errors inside it pass."""
    signature = inspect.signature(env.reset)
    takes_any = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
    if not (takes_any or "seed" in signature.parameters):
        raise _old_api_error(name, f"reset(seed=0) failed: reset{signature} takes no seed")
    if not (takes_any or "options" in signature.parameters):
        raise TypeError(f"Env {name!r}: reset() must take options: def reset(self, *, seed=None, "
                        "options=None) (gymnasium's vector envs pass both; this one is "
                        f"reset{signature}).")
    try:
        return env.reset(seed=0, options=None)
    except Exception as e:
        e.add_note(f"(Raised in reset(seed=0, options=None) of env {name!r}, which build_algo() "
                   "calls to probe the env.)")
        raise


def _check_step_values(name: str, reward: Any, terminated: Any, truncated: Any, info: Any) -> None:
    """What gymnasium's vector env would turn into numpy's errors, or misread (None as False)."""
    flag = "return True or False (None does not mean False: an episode must end)"
    for what, value, ok, fix in (
            ("reward", reward, np.ndim(reward) == 0 and np.asarray(reward).dtype.kind in "biuf",
             "return one number, e.g. float(reward) (an array of shape (1,), as -action**2 gives "
             "for a Box((1,)) action, needs .item())"),
            ("terminated", terminated, isinstance(terminated, bool | np.bool_), flag),
            ("truncated", truncated, isinstance(truncated, bool | np.bool_), flag),
            ("info", info, isinstance(info, dict), "return a dict, e.g. {}")):
        if not ok:
            raise TypeError(f"Env {name!r}: step() returned {what} {value!r} (a "
                            f"{type(value).__name__}): {fix}.")


def _describe(value: Any) -> str:
    return f"a tuple of {len(value)} values" if isinstance(value, tuple) else f"a {type(value).__name__}"


def _old_api_error(name: str, what: str) -> TypeError:
    return TypeError(
        f"Env {name!r} follows the old gym API: its {what}. rlcourse (like RLlib) uses gymnasium's "
        "API: reset(*, seed=None, options=None) -> (obs, info) and step(action) -> (obs, reward, "
        "terminated, truncated, info). Update the env, or wrap an old gym env with shimmy's "
        "GymV21CompatibilityV0(env=...) in your env creator.")


def check_same_spaces(name: str, expected: tuple[gym.Space, gym.Space],
                      runner_spaces: list[tuple[gym.Space, gym.Space]]) -> None:
    """Every runner's env must have the spaces of the env probed in the driver, which sized the model."""
    for index, spaces in enumerate(runner_spaces, start=1):
        for kind, have, want in zip(("observation_space", "action_space"), spaces, expected,
                                    strict=True):
            if _shape_of(have) != _shape_of(want):
                raise ValueError(
                    f"Env {name!r} on EnvRunner {index} has {kind} {have}, but the env built in the "
                    f"driver (worker_index 0, whose spaces size the model) has {want}. Every "
                    "runner's env needs the same spaces: make env_config per worker_index change "
                    "values, not shapes or sizes.")


def _shape_of(space: gym.Space) -> tuple:
    """What the model depends on: the space's kind, shape, dtype and, for Discrete, n and start."""
    return (type(space).__name__, space.shape, space.dtype,
            *(tuple(np.ravel(getattr(space, key, ())).tolist()) for key in ("n", "start")))
