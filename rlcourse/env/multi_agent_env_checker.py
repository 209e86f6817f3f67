"""check_multi_agent_env: gymnasium's `check_env`, for the dict API of a MultiAgentEnv.

It resets and steps the env with random actions for the agents that must act, and checks what comes
back: five dicts, per-agent observations inside their agents' spaces, finite numeric rewards, the
`"__all__"` key, and (through MultiAgentEpisode) that rewards and done flags only go to agents that
observed and are not done yet. A course env's test calls it; so can a learner for their own env.
"""

import math
from numbers import Real
from typing import Any

import numpy as np

from rlcourse.env.multi_agent_env import ALL, MultiAgentEnv
from rlcourse.env.multi_agent_episode import MultiAgentEpisode


def check_multi_agent_env(env: MultiAgentEnv, num_steps: int = 200, seed: int = 0) -> None:
    """Raise a ValueError or TypeError that names the agent and the fix at the first problem."""
    name = type(env).__name__
    if not isinstance(env, MultiAgentEnv):
        raise TypeError(f"{name} is not a rlcourse.env.multi_agent_env.MultiAgentEnv.")
    if not env.possible_agents:
        raise ValueError(f"{name}.possible_agents is empty: list every agent id in __init__.")
    spaces = {a: (env.get_observation_space(a), env.get_action_space(a))
              for a in env.possible_agents}
    rng = np.random.default_rng(seed)
    for space_pair in spaces.values():
        space_pair[1].seed(int(rng.integers(2**31)))
    steps, episode = 0, None
    while steps < num_steps:
        if episode is None or episode.is_done:
            result = env.reset(seed=int(rng.integers(2**31)))
            _check_tuple(name, "reset()", result, 2)
            observations = result[0]
            _check_observations(name, "reset()", observations, spaces)
            episode = MultiAgentEpisode(env_name=name)
            episode.add_env_reset(observations)
            if not observations:
                raise ValueError(f"{name}.reset() returned no observations: at least one agent "
                                 "must observe (and act) first.")
        actions = {a: spaces[a][1].sample() for a in episode.get_agents_to_act()}
        result = env.step(actions)
        _check_tuple(name, "step()", result, 5)
        observations, rewards, terminateds, truncateds, _ = result
        _check_observations(name, "step()", observations, spaces)
        for agent_id, reward in rewards.items():
            if not isinstance(reward, Real | np.number) or not math.isfinite(float(reward)):
                raise ValueError(f"{name}.step() returned reward {reward!r} for agent "
                                 f"{agent_id!r}: rewards must be finite numbers.")
        if ALL not in truncateds:
            raise ValueError(f"{name}.step() returned truncateds without the '__all__' key: add "
                             "truncateds['__all__'] (True when a time limit ends the episode).")
        episode.add_env_step(observations, actions, rewards, terminateds, truncateds)
        if not episode.is_done and not episode.get_agents_to_act():
            raise ValueError(f"{name}.step() returned no observations, but the episode is not "
                             "over: some agent must observe and act next, or set "
                             "terminateds['__all__'] / truncateds['__all__'].")
        steps += 1


def _check_tuple(name: str, call: str, result: Any, n: int) -> None:
    if not (isinstance(result, tuple) and len(result) == n
            and all(isinstance(part, dict) for part in result)):
        raise TypeError(f"{name}.{call} must return a tuple of {n} dicts keyed by agent id, got "
                        f"{type(result).__name__}.")


def _check_observations(name: str, call: str, observations: dict, spaces: dict) -> None:
    for agent_id, obs in observations.items():
        if agent_id not in spaces:
            raise ValueError(f"{name}.{call} returned an observation for agent {agent_id!r}, which "
                             f"is not in possible_agents {list(spaces)}. Add it there.")
        space = spaces[agent_id][0]
        if not space.contains(obs):
            raise ValueError(f"{name}.{call} returned an observation for agent {agent_id!r} that "
                             f"is not in its observation space {space}: {obs!r}. Make the two "
                             "agree, e.g. np.array(..., dtype=np.float32) for a float32 Box.")
