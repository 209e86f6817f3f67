"""MultiAgentEnv: one environment that hosts several agents, each with its own spaces (RLlib's API).

`reset()` returns `(observations, infos)` and `step(action_dict)` returns `(observations, rewards,
terminateds, truncateds, infos)`, all dicts keyed by agent id. Only the agents in the observations
dict act next, so agents may take turns; `terminateds["__all__"]` / `truncateds["__all__"]` end the
episode for everyone, and an agent's own flag ends it for that agent alone (it finished early).
"""

from typing import Any

import gymnasium as gym

from rlcourse.env.env_context import EnvContext
from rlcourse.env.registry import EnvCreator, get_env_creator

AgentID = Any  # hashable: RLlib uses strings, make_multi_agent uses ints 0..N-1
ALL = "__all__"  # the key of terminateds/truncateds that ends the episode for every agent


class MultiAgentEnv(gym.Env):
    """Base class of multi-agent envs: set `possible_agents`, `agents` and the per-agent
    `observation_spaces` / `action_spaces` dicts in `__init__`, then write `reset` and `step`."""

    # Every agent that may ever appear (fixed for the env's lifetime), and those active right now.
    possible_agents: list[AgentID] = []
    agents: list[AgentID] = []
    observation_spaces: dict[AgentID, gym.Space] | None = None
    action_spaces: dict[AgentID, gym.Space] | None = None

    def get_observation_space(self, agent_id: AgentID) -> gym.Space:
        """The observation space of `agent_id` (override this instead of the dicts if you like)."""
        return _lookup(self, "observation_spaces", agent_id)

    def get_action_space(self, agent_id: AgentID) -> gym.Space:
        """The action space of `agent_id`."""
        return _lookup(self, "action_spaces", agent_id)


def _lookup(env: MultiAgentEnv, attr: str, agent_id: AgentID) -> gym.Space:
    spaces = getattr(env, attr)
    if spaces is None:
        raise ValueError(f"{type(env).__name__} has no {attr} dict: set self.{attr} = "
                         f"{{agent_id: space, ...}} in its __init__ (or override get_{attr[:-1]}).")
    if agent_id not in spaces:
        raise KeyError(f"{type(env).__name__}.{attr} has no entry for agent {agent_id!r}; it has "
                       f"{names(spaces)}. Every agent in possible_agents needs one.")
    return spaces[agent_id]


def names(ids: Any) -> str:
    """Agent or module ids for an error message: 'a', 'b' (sorted, quoted)."""
    return ", ".join(sorted(map(repr, ids)))


def check_action_dict(env_name: str, action_dict: dict, acting: list[AgentID] | set) -> None:
    """Refuse an action dict that leaves out an agent that must act, or names one that must not."""
    missing = [a for a in acting if a not in action_dict]
    if missing:
        raise ValueError(f"{env_name}.step(): no action for agent {missing[0]!r}, which observed "
                         f"last and must act (agents to act: {names(acting)}). Pass an "
                         "action for every agent in the last observations dict that is not done.")
    extra = [a for a in action_dict if a not in acting]
    if extra:
        raise ValueError(f"{env_name}.step(): action for agent {extra[0]!r}, which is not to act "
                         f"now (it is done, or got no observation); agents to act: "
                         f"{names(acting)}. Leave it out of the action dict.")


def make_multi_agent(env_name_or_creator: str | EnvCreator | type) -> type[MultiAgentEnv]:
    """A MultiAgentEnv class, built with `{"num_agents": N, **env_config}`, whose agents 0..N-1 each
    step their own copy of a single-agent env; an agent is done when its copy's episode ends, and
    the episode ends for all (`"__all__"`) when every copy has ended."""
    creator = get_env_creator(env_name_or_creator)
    name = env_name_or_creator if isinstance(env_name_or_creator, str) else getattr(
        env_name_or_creator, "__name__", "env")

    class MultiEnv(MultiAgentEnv):
        def __init__(self, config: dict | None = None):
            config = config if config is not None else {}
            num_agents = int(config.get("num_agents", 1))
            if num_agents < 1:
                raise ValueError(f"make_multi_agent({name!r}): num_agents must be >= 1, got "
                                 f"{num_agents}.")
            sub_config = EnvContext({k: v for k, v in config.items() if k != "num_agents"}, *(
                getattr(config, key, 0) for key in ("worker_index", "vector_index", "num_workers")))
            self.envs = [creator(sub_config) for _ in range(num_agents)]
            self.possible_agents = list(range(num_agents))
            self.agents = list(self.possible_agents)
            self.observation_spaces = {i: env.observation_space for i, env in enumerate(self.envs)}
            self.action_spaces = {i: env.action_space for i, env in enumerate(self.envs)}
            self._acting, self._any_truncated = set(self.agents), False

        def reset(self, *, seed: int | None = None, options: dict | None = None
                  ) -> tuple[dict, dict]:
            super().reset(seed=seed)
            self.agents = list(self.possible_agents)
            self._acting, self._any_truncated = set(self.agents), False
            obs, infos = {}, {}
            for i, env in enumerate(self.envs):
                # Copy i gets seed * N + i: no two copies (nor two seeded envs) play the same episode.
                copy_seed = None if seed is None else seed * len(self.envs) + i
                obs[i], infos[i] = env.reset(seed=copy_seed, options=options)
            return obs, infos

        def step(self, action_dict: dict) -> tuple[dict, dict, dict, dict, dict]:
            if action_dict.keys() != self._acting:
                check_action_dict(f"make_multi_agent({name!r})", action_dict, self.agents)
            obs, rewards, terminateds, truncateds, infos = {}, {}, {}, {}, {}
            still = []
            for i, action in action_dict.items():
                obs[i], rewards[i], terminateds[i], truncateds[i], infos[i] = self.envs[i].step(action)
                if not (terminateds[i] or truncateds[i]):
                    still.append(i)
                elif truncateds[i] and not terminateds[i]:
                    self._any_truncated = True
            self.agents, self._acting = still, set(still)
            # All copies ended: the episode counts as truncated if any copy was cut off by a limit.
            truncateds[ALL] = not still and self._any_truncated
            terminateds[ALL] = not still and not self._any_truncated
            return obs, rewards, terminateds, truncateds, infos

        def render(self) -> Any:
            return self.envs[0].render()

        def close(self) -> None:
            for env in self.envs:
                env.close()

    MultiEnv.__name__ = MultiEnv.__qualname__ = f"MultiAgent{name}".replace("-", "_")
    return MultiEnv
