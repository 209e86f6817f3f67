"""Lesson 03's exercise: write the `Corridor` env to a spec, checked by gymnasium and by its meaning.

The spec (also in the lesson): a corridor of `length` cells (env_config, default 10). The agent starts
in cell 0 and sees its cell as a float32 array of shape (1,), inside Box(0, length - 1). Action 0
steps left (never below cell 0), action 1 steps right. Reaching the last cell gives reward +1 and
terminates the episode; every other step gives -0.1. After `max_episode_steps` steps (env_config,
default 50) an episode that has not terminated is truncated.

The checker walks every action in every direction (right to the goal, left back from a middle cell,
left against the wall, left until the time limit, with or without a step right first) with several
env_configs, builds the env without a config (it may be None), and resets a second env beside the
first (sub-envs keep their own state). A stub that still
raises NotImplementedError is reported as not attempted, and the lesson goes on with
`ReferenceCorridor`. One env_config makes the goal the last allowed step: the spec truncates only
an episode that has not terminated, so `truncated = steps >= max_episode_steps` alone is wrong.

Review, what answer would still pass that should not? An env right for these four env_configs and
wrong for others (e.g. a length over 12 handled differently), rendering (not checked), and extra
keys in info (allowed by the spec).
"""

import re
import warnings

import gymnasium as gym
import numpy as np
from gymnasium.utils.env_checker import check_env

from rlcourse.course.exercises.common import ExerciseError, NotAttempted, exercise, passed
from rlcourse.env.env_context import EnvContext

__all__ = ["ReferenceCorridor", "check_env_implementation"]

DEFAULT_LENGTH, DEFAULT_MAX_STEPS = 10, 50
GOAL_REWARD, STEP_REWARD = 1.0, -0.1
LEFT, RIGHT = 0, 1
# (env_config, the length and step limit it means), tried in this order.
CONFIGS = [({"length": 6, "max_episode_steps": 20}, 6, 20),
           ({"length": 3, "max_episode_steps": 5}, 3, 5),
           # The goal is reached on the last allowed step: terminated, and not truncated.
           ({"length": 5, "max_episode_steps": 4}, 5, 4),
           ({"length": 12, "max_episode_steps": 40}, 12, 40),
           ({}, DEFAULT_LENGTH, DEFAULT_MAX_STEPS)]
ANSI = re.compile(r"\x1b\[[0-9;]*m")


class ReferenceCorridor(gym.Env):
    """rlcourse's answer: walk right from cell 0 to the last cell of a corridor."""

    def __init__(self, config=None):
        config = config or {}
        self.length = config.get("length", DEFAULT_LENGTH)
        self.max_episode_steps = config.get("max_episode_steps", DEFAULT_MAX_STEPS)
        self.observation_space = gym.spaces.Box(0.0, self.length - 1, shape=(1,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.position, self.steps = 0, 0
        return np.array([self.position], dtype=np.float32), {}

    def step(self, action):
        self.position = max(0, self.position - 1) if action == LEFT else self.position + 1
        self.steps += 1
        terminated = self.position == self.length - 1
        truncated = not terminated and self.steps >= self.max_episode_steps
        reward = GOAL_REWARD if terminated else STEP_REWARD
        return np.array([self.position], dtype=np.float32), reward, terminated, truncated, {}


def _fail(message: str) -> None:
    raise ExerciseError(message)


def _make(env_class: type, env_config: dict) -> gym.Env:
    context = EnvContext(env_config, worker_index=1, vector_index=0)
    try:
        return env_class(context)
    except NotImplementedError:
        raise
    except TypeError as e:
        raise ExerciseError(
            f"{env_class.__name__}(env_config) raised TypeError: {e}. rlcourse (like RLlib) builds "
            "an env class with one argument, the env_config: write `def __init__(self, config=None)` "
            "and read settings with config.get(...).") from e
    except Exception as e:
        raise ExerciseError(f"{env_class.__name__}({env_config}) raised {type(e).__name__}: "
                            f"{e}") from e


def _check_spaces(env: gym.Env, length: int, where: str) -> None:
    if env.action_space != gym.spaces.Discrete(2):
        _fail(f"{where}: action_space is {env.action_space}; the spec says Discrete(2) "
              "(0 = left, 1 = right).")
    space = env.observation_space
    if not isinstance(space, gym.spaces.Box) or space.shape != (1,) or space.dtype != np.float32:
        _fail(f"{where}: observation_space is {space}; the spec says "
              "Box(0.0, length - 1, shape=(1,), dtype=np.float32).")
    if space.low[0] != 0 or space.high[0] != length - 1:
        _fail(f"{where}: observation_space runs from {space.low[0]} to {space.high[0]}, but with "
              f"length={length} the cells are 0 ... {length - 1}. Size the space from "
              "env_config['length'] in __init__.")


def _check_obs(env: gym.Env, obs, cell: int, where: str, hint: str = "") -> None:
    if not isinstance(obs, np.ndarray) or obs.shape != (1,) or obs.dtype != np.float32:
        got = (f"{type(obs).__name__} with shape {obs.shape} and dtype {obs.dtype}"
               if isinstance(obs, np.ndarray) else f"{type(obs).__name__} {obs!r}")
        _fail(f"{where} returned the observation {got}. The spec says a float32 array of shape "
              "(1,): np.array([position], dtype=np.float32). (np.array([position]) alone is int64 "
              "or float64, which observation_space does not contain.)")
    if obs[0] != cell:
        _fail(f"{where}: the observation is {obs.tolist()}, but the agent should be in cell "
              f"{cell}.{hint}")
    if obs not in env.observation_space:
        _fail(f"{where}: the observation {obs.tolist()} is not in observation_space "
              f"{env.observation_space}.")


def _reset(env: gym.Env, where: str) -> None:
    result = env.reset(seed=0)
    if not isinstance(result, tuple) or len(result) != 2:
        _fail(f"{where}: reset() must return a pair (observation, info dict), got {result!r}.")
    obs, info = result
    if not isinstance(info, dict):
        _fail(f"{where}: reset() must return (observation, info) with info a dict; got info={info!r}.")
    _check_obs(env, obs, 0, f"{where}: reset()")


def _step(env: gym.Env, action: int, cell: int, where: str, hint: str = ""
          ) -> tuple[float, bool, bool]:
    """Step, check the result's form and the agent's cell; return (reward, terminated, truncated)."""
    result = env.step(np.int64(action))  # as a runner's vector env passes it, not a Python int
    if not isinstance(result, tuple) or len(result) != 5:
        _fail(f"{where} must return five values (obs, reward, terminated, truncated, info), got "
              f"{len(result) if isinstance(result, tuple) else result!r}. The old gym API's single "
              "`done` is split in two: terminated (the task ended) and truncated (time ran out).")
    obs, reward, terminated, truncated, info = result
    for name, flag in (("terminated", terminated), ("truncated", truncated)):
        if not isinstance(flag, bool):
            kind = f"{type(flag).__module__}.{type(flag).__qualname__}".removeprefix("builtins.")
            _fail(f"{where}: {name} is a {kind}, not a Python bool. Wrap it: bool(...). "
                  "(gymnasium's checker needs Python bools; with np.bool_ it reports a confusing "
                  "'truncates after 1 step'.)")
    if not isinstance(reward, int | float | np.integer | np.floating):
        _fail(f"{where}: the reward is a {type(reward).__name__}; return a plain number.")
    if not isinstance(info, dict):
        _fail(f"{where}: info must be a dict, got {info!r}.")
    _check_obs(env, obs, cell, where, hint or " (Actions arrive as numpy integers, np.int64(0) "
               "or np.int64(1), as a runner passes them: compare with ==, never with `is`.)")
    return float(reward), terminated, truncated


def _check_walk_right(env: gym.Env, length: int, max_steps: int, where: str) -> None:
    """Always right: -0.1 per step, then +1 and terminated on reaching the last cell."""
    _reset(env, where)
    for t in range(1, length):
        reward, terminated, truncated = _step(env, RIGHT, t, f"{where}: step {t} to the right")
        at_goal = t == length - 1
        if at_goal and not terminated:
            _fail(f"{where}: after {t} steps to the right the agent is in the last cell, but "
                  "terminated is False. Reaching the last cell ends the episode: terminated=True.")
        if terminated and not at_goal:
            _fail(f"{where}: terminated is True in cell {t}, before the last cell {length - 1}.")
        if truncated and at_goal and t >= max_steps:
            _fail(f"{where}: the agent reached the goal on step {t}, the last one "
                  f"max_episode_steps={max_steps} allows, and you returned terminated=True and "
                  "truncated=True. The spec truncates only an episode that has not terminated: "
                  "truncated = not terminated and steps >= max_episode_steps.")
        if truncated:
            _fail(f"{where}: truncated is True after {t} steps, but max_episode_steps is "
                  f"{max_steps}. Read it from env_config and count the steps since reset().")
        expected = GOAL_REWARD if at_goal else STEP_REWARD
        if not np.isclose(reward, expected):
            _fail(f"{where}: step {t} to the right gave reward {reward}; the spec says "
                  f"{expected} ({'+1 on reaching the last cell' if at_goal else '-0.1 per step'}).")


def _check_without_config(env_class: type) -> None:
    """`Corridor()` and `Corridor(None)`: the spec's defaults (config may be None)."""
    for args, built in (((), f"{env_class.__name__}()"), ((None,), f"{env_class.__name__}(None)")):
        try:
            env = env_class(*args)
        except NotImplementedError:
            raise
        except Exception as e:
            raise ExerciseError(f"{built} raised {type(e).__name__}: {e}. The spec's config may be "
                                "None (the default, `def __init__(self, config=None)`): start with "
                                "`config = config or {}`, then read it with config.get(...).") from e
        _check_spaces(env, DEFAULT_LENGTH, built)


def _check_walk_left(env: gym.Env, max_steps: int, where: str, first: int = LEFT) -> None:
    """Left (after one step right, if `first` is RIGHT): the agent ends up in cell 0 and the
    episode is truncated after max_steps steps, whichever way they went."""
    _reset(env, where)
    where += ": one step to the right, then left" if first == RIGHT else ""
    for t in range(1, max_steps + 1):
        action, cell = (RIGHT, 1) if t == 1 and first == RIGHT else (LEFT, 0)
        reward, terminated, truncated = _step(env, action, cell, f"{where}: step {t}")
        if terminated:
            _fail(f"{where}: walking left, terminated is True after {t} steps. Running out of time "
                  "is truncation (truncated=True), not termination: only the goal terminates.")
        if truncated and t < max_steps:
            _fail(f"{where}: truncated after {t} steps, but max_episode_steps is {max_steps}. "
                  "Does reset() restart the step counter?")
        if not np.isclose(reward, STEP_REWARD):
            _fail(f"{where}: step {t} to the left gave reward {reward}; the spec says -0.1.")
    if not truncated:
        _fail(f"{where}: {max_steps} steps (max_episode_steps) did not end the episode. Count "
              "every step, to the left and to the right, and return truncated=True once that many "
              "have passed since reset().")


def _check_apart(env: gym.Env, other: gym.Env, where: str) -> None:
    """Two envs (a vector env's sub-envs) keep their own state: resetting one leaves the other."""
    _reset(env, where)
    _step(env, RIGHT, 1, f"{where}: env A's first step to the right")
    _reset(other, f"{where}, env B")
    _step(env, RIGHT, 2, f"{where}: env A's second step to the right, after env B's reset()",
          " Keep the position and the step count on the instance (self.position), not on the "
          "class: every sub-env is its own corridor.")


def _check_back_and_forth(env: gym.Env, where: str) -> None:
    """Right, left, left against the wall, right: action 0 moves left, and never below cell 0."""
    _reset(env, where)
    for t, (action, cell) in enumerate([(RIGHT, 1), (LEFT, 0), (LEFT, 0), (RIGHT, 1), (RIGHT, 2),
                                        (LEFT, 1)], start=1):
        name = "right" if action == RIGHT else "left"
        reward, terminated, truncated = _step(env, action, cell,
                                              f"{where}: step {t} (to the {name}) of right, left, "
                                              "left, right, right, left")
        if terminated or truncated or not np.isclose(reward, STEP_REWARD):
            _fail(f"{where}: step {t} (to the {name}, now in cell {cell}) gave reward {reward}, "
                  f"terminated={terminated}, truncated={truncated}; the spec says -0.1 and the "
                  "episode goes on.")


def _run_gymnasium_checker(env: gym.Env) -> None:
    """gymnasium's own checker; its warnings count as failures here, so none goes unnoticed."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            check_env(env, skip_render_check=True)
        except NotImplementedError:
            raise
        except Exception as e:
            hint = ""
            if "super().reset(seed=seed)" in str(e):
                hint = " Start reset() with super().reset(seed=seed): it seeds self.np_random."
            elif "share an object" in str(e):
                hint = " Build a new array for each observation instead of changing one in place."
            raise ExerciseError(f"gymnasium's check_env failed: {type(e).__name__}: "
                                f"{ANSI.sub('', str(e))}{hint}") from e
    problems = [ANSI.sub("", str(w.message)) for w in caught
                if not issubclass(w.category, DeprecationWarning)]
    if problems:
        _fail("gymnasium's check_env warned: " + " | ".join(problems))


@exercise("corridor", stub="Corridor", fallback="rlcourse's ReferenceCorridor",
          reference=lambda env_class: ReferenceCorridor)
def check_env_implementation(env_class: type) -> type:
    """Check an env class against the Corridor spec: gymnasium's checker plus what the spec means
    (observations in the space, bool flags, every action in every direction, the episode ends as
    it should, env_config honoured). Returns `env_class` when it is right."""
    try:
        _check(env_class)
    except NotImplementedError as e:
        raise NotAttempted(str(e)) from None
    return env_class


def _check(env_class: type) -> None:
    if isinstance(env_class, gym.Env):
        _fail("Pass the class itself (Corridor), not an instance (Corridor()): rlcourse builds "
              "one env per sub-env slot, each with its own EnvContext.")
    if not (isinstance(env_class, type) and issubclass(env_class, gym.Env)):
        _fail(f"Expected a subclass of gymnasium.Env, got {env_class!r}.")
    _check_without_config(env_class)
    for env_config, length, max_steps in CONFIGS:
        where = f"with env_config={env_config}"
        env = _make(env_class, env_config)
        _check_spaces(env, length, where)
        _reset(env, where)
        _step(env, RIGHT, 1, f"{where}: the first step to the right")
        if env_config == CONFIGS[0][0]:
            _run_gymnasium_checker(_make(env_class, env_config))
        _check_walk_right(env, length, max_steps, where)
        if length >= 4 and max_steps > 6:  # the walk reaches cell 2 (not the goal) in 6 steps
            _check_back_and_forth(env, where)
        # The same env object again, as a vector env reuses it: reset() must start afresh.
        _check_walk_left(env, max_steps, where)
        _check_walk_right(env, length, max_steps, f"{where}, after a truncated episode")
        _check_walk_left(env, max_steps, where, first=RIGHT)
        _check_apart(env, _make(env_class, env_config), where)
        env.close()
    passed(f"{env_class.__name__} passes gymnasium's check_env and behaves as the spec says for "
           f"{len(CONFIGS)} env_configs (including the defaults).")
