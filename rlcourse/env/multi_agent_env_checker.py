"""check_multi_agent_env: gymnasium's `check_env` for a MultiAgentEnv's dict API, for the course's
envs and a learner's own: it steps the env with random actions and checks what comes back."""

import math
from numbers import Real
from typing import Any

import numpy as np

from rlcourse.env.multi_agent_env import ALL, MultiAgentEnv
from rlcourse.env.multi_agent_episode import MultiAgentEpisode


def check_multi_agent_env(env: MultiAgentEnv, num_steps: int = 200, seed: int = 0) -> None:
    """Raise a ValueError or TypeError that names the agent and the fix at the first problem: five
    dicts, observations in their spaces, finite rewards, and (through MultiAgentEpisode) rewards
    and done flags only for agents that observed and are not done."""
    name = type(env).__name__
    if not isinstance(env, MultiAgentEnv):
        raise TypeError(f"{name} is not a rlcourse.env.multi_agent_env.MultiAgentEnv.")
    if not env.possible_agents:
        raise ValueError(f"{name}.possible_agents is empty: list every agent id in __init__.")
    spaces = {a: (env.get_observation_space(a), env.get_action_space(a)) for a in env.possible_agents}
    rng = np.random.default_rng(seed)
    for _, action_space in spaces.values():
        action_space.seed(int(rng.integers(2**31)))
    episode = None
    for _ in range(num_steps):
        if episode is None or episode.is_done:
            result = env.reset(seed=int(rng.integers(2**31)))
            _check_result(name, "reset()", result, 2, spaces)
            episode = MultiAgentEpisode(env_name=name)
            episode.add_env_reset(result[0])
            _check_someone_acts(name, "reset()", episode)
        actions = {a: spaces[a][1].sample() for a in episode.get_agents_to_act()}
        result = env.step(actions)
        _check_result(name, "step()", result, 5, spaces)
        observations, rewards, terminateds, truncateds, _ = result
        for agent_id, reward in rewards.items():
            if not isinstance(reward, Real | np.number) or not math.isfinite(float(reward)):
                raise ValueError(f"{name}.step() returned reward {reward!r} for agent "
                                 f"{agent_id!r}: rewards must be finite numbers.")
        if ALL not in truncateds:
            raise ValueError(f"{name}.step() returned truncateds without the '__all__' key: add "
                             "truncateds['__all__'] (True when a time limit ends the episode).")
        episode.add_env_step(observations, actions, rewards, terminateds, truncateds)
        _check_someone_acts(name, "step()", episode)


def _check_result(name: str, call: str, result: Any, n: int, spaces: dict) -> None:
    """Refuse a `result` that is not a tuple of `n` dicts whose observations (the first) fit."""
    if not (isinstance(result, tuple) and len(result) == n
            and all(isinstance(part, dict) for part in result)):
        raise TypeError(f"{name}.{call} must return a tuple of {n} dicts keyed by agent id, got "
                        f"{type(result).__name__}.")
    for agent_id, obs in result[0].items():
        if agent_id not in spaces:
            raise ValueError(f"{name}.{call} returned an observation for agent {agent_id!r}, which "
                             f"is not in possible_agents {list(spaces)}. Add it there.")
        space = spaces[agent_id][0]
        if not space.contains(obs):
            raise ValueError(f"{name}.{call} returned an observation for agent {agent_id!r} that "
                             f"is not in its observation space {space}: {obs!r}. Make the two "
                             "agree, e.g. np.array(..., dtype=np.float32) for a float32 Box.")


def _check_someone_acts(name: str, call: str, episode: MultiAgentEpisode) -> None:
    if not episode.is_done and not episode.get_agents_to_act():
        raise ValueError(f"{name}.{call} returned no observations, but the episode is not over: "
                         "some agent must observe (and act next) until terminateds['__all__'] or "
                         "truncateds['__all__'] ends it.")
