"""MultiAgentEpisode: one multi-agent episode (or a chunk of it), as one SingleAgentEpisode per agent.

Each agent lives on its own clock: its transition closes at its next observation, however many env
steps later (agents may take turns), and the rewards it gets in between add up into it. An agent that
is done without a last observation keeps its previous one as the last, as RLlib does.
"""

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from rlcourse.core import DEFAULT_MODULE_ID
from rlcourse.env.multi_agent_env import ALL, AgentID, names
from rlcourse.env.single_agent_episode import SingleAgentEpisode

ModuleID = str


def default_agent_to_module_mapping_fn(agent_id: AgentID, episode: "MultiAgentEpisode") -> ModuleID:
    """Every agent acts with the one module RLlib calls "default_policy"."""
    return DEFAULT_MODULE_ID


class _AgentRecord:
    """One agent's data in the current chunk, in lists; its open action lives in `pending`."""

    __slots__ = ("id_", "t_started", "obs", "actions", "rewards", "extra", "ready", "pending",
                 "pending_extra", "pending_reward", "terminated", "truncated")

    def __init__(self, obs: Any, t_started: int = 0, id_: str | None = None):
        self.id_ = id_ or SingleAgentEpisode.new_id()
        self.t_started = t_started
        self.obs, self.actions, self.rewards = [obs], [], []
        self.extra: dict[str, list] = {}
        self.ready = True  # has an observation it has not acted on yet (so it must act next)
        self.pending: Any = None  # the action taken on the last observation, awaiting the next one
        self.pending_extra, self.pending_reward = {}, 0.0  # its model outputs and rewards so far
        self.terminated = self.truncated = False

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated

    def close(self, next_obs: Any) -> None:
        """The open action's transition ends at `next_obs`, which the agent acts on next."""
        self.obs.append(next_obs)
        self.actions.append(self.pending)
        self.rewards.append(self.pending_reward)
        for key, value in self.pending_extra.items():
            self.extra.setdefault(key, []).append(value)
        self.pending, self.pending_extra, self.pending_reward = None, {}, 0.0
        self.ready = True

    def to_episode(self) -> SingleAgentEpisode:
        """The agent's SingleAgentEpisode (which makes its lists arrays)."""
        actions = self.actions if len(self.actions) else np.zeros(0, dtype=np.int64)
        return SingleAgentEpisode(self.obs, actions, self.rewards, self.extra, self.terminated,
                                  self.truncated, id_=self.id_, t_started=self.t_started)


class MultiAgentEpisode:
    """The agents' episodes of one env episode chunk, their modules, and the env's own clock."""

    def __init__(self, id_: str | None = None, *,
                 agent_to_module_mapping_fn: Callable[[AgentID, "MultiAgentEpisode"], ModuleID]
                 | None = None, env_t_started: int = 0, env_name: str = "the env"):
        self.id_ = id_ or SingleAgentEpisode.new_id()
        self.agent_to_module_mapping_fn = (agent_to_module_mapping_fn
                                           or default_agent_to_module_mapping_fn)
        self.agent_to_module_mapping: dict[AgentID, ModuleID] = {}  # fixed per agent per episode
        self.env_t_started = self.env_t = env_t_started
        self.env_name = env_name
        self.is_terminated = self.is_truncated = False
        self._records: dict[AgentID, _AgentRecord] = {}
        self._done_in_earlier_chunks: set[AgentID] = set()
        self._is_numpy = False

    # -- recording --------------------------------------------------------------------------

    def add_env_reset(self, observations: dict[AgentID, Any], infos: dict | None = None) -> None:
        """The observations of `env.reset()`: these agents act first."""
        for agent_id, obs in observations.items():
            self._new_agent(agent_id, obs)

    def add_env_step(self, observations: dict[AgentID, Any], actions: dict[AgentID, Any],
                     rewards: dict[AgentID, float], terminateds: dict, truncateds: dict,
                     infos: dict | None = None,
                     extra_model_outputs: dict[AgentID, dict[str, Any]] | None = None) -> None:
        """One `env.step(actions)`: `actions` are what each acting agent's module chose (with
        `extra_model_outputs[agent]`, e.g. its `action_logp`), the rest is what the env returned."""
        if self._is_numpy:
            raise ValueError(f"Episode {self.id_[:8]} was turned to NumPy (to_numpy()) and is "
                             "read-only; continue the episode in the chunk that cut() made.")
        if self.is_done:
            raise ValueError(f"{self.env_name}: step after the episode {self.id_[:8]} ended "
                             "(terminateds or truncateds '__all__' was True); reset the env.")
        if ALL not in terminateds:
            raise ValueError(f"{self.env_name}.step() returned terminateds without the '__all__' "
                             f"key (it has {names(terminateds)}). Add "
                             "terminateds['__all__'] (True when the episode is over for everyone).")
        self._take_actions(actions, extra_model_outputs or {})
        for agent_id, reward in rewards.items():
            record = self._records.get(agent_id)
            if record is None or record.done:
                raise ValueError(self._premature(agent_id, "rewarded", record))
            # None counts as NaN: the runner's finite check names it (env_runner.NonFiniteEnvData).
            record.pending_reward += math.nan if reward is None else float(reward)
        for agent_id, obs in observations.items():
            record = self._records.get(agent_id)
            if record is None and agent_id not in self._done_in_earlier_chunks:
                self._new_agent(agent_id, obs)
            elif record is None or record.done:
                raise ValueError(self._premature(agent_id, "sent an observation to", record))
            else:
                record.close(obs)
        self._apply_done_flags(terminateds, truncateds)
        self.env_t += 1

    def _new_agent(self, agent_id: AgentID, obs: Any) -> None:
        self.agent_to_module_mapping[agent_id] = self.agent_to_module_mapping_fn(agent_id, self)
        self._records[agent_id] = _AgentRecord(obs)

    def _take_actions(self, actions: dict, extra_model_outputs: dict) -> None:
        for agent_id, action in actions.items():
            record = self._records.get(agent_id)
            if record is None or not record.ready:
                raise ValueError(f"{self.env_name}: an action for agent {agent_id!r} at env step "
                                 f"{self.env_t}, which has no new observation to act on. Only "
                                 "agents in the last observations dict act.")
            record.pending, record.ready = action, False
            record.pending_extra = extra_model_outputs.get(agent_id) or {}
        waiting = self.get_agents_to_act()
        if waiting:
            raise ValueError(f"{self.env_name}: agent {waiting[0]!r} observed at env step "
                             f"{self.env_t} but got no action. Every agent in the last "
                             "observations dict that is not done must act in the next step.")

    def _apply_done_flags(self, terminateds: dict, truncateds: dict) -> None:
        for flags, is_term in ((terminateds, True), (truncateds, False)):
            for agent_id, flag in flags.items():
                if agent_id == ALL or not flag:
                    continue
                record = self._records.get(agent_id)
                if record is None:
                    if agent_id in self._done_in_earlier_chunks:
                        continue  # an env may repeat an agent's done flag after it finished
                    raise ValueError(self._premature(agent_id, "ended the episode of", None))
                if not record.done:
                    self._finish(record, is_term)
        all_terminated, all_truncated = bool(terminateds[ALL]), bool(truncateds.get(ALL, False))
        if all_terminated or all_truncated:
            for record in self._records.values():
                if not record.done:
                    self._finish(record, all_terminated)
            self.is_terminated, self.is_truncated = all_terminated, not all_terminated

    def _finish(self, record: _AgentRecord, terminated: bool) -> None:
        """End an agent's episode; an open action ends at its last observation (none came)."""
        if record.pending is not None:
            record.close(record.obs[-1])
        record.ready = False
        record.terminated, record.truncated = terminated, not terminated

    def _premature(self, agent_id: AgentID, what: str, record: _AgentRecord | None) -> str:
        # Every observed agent that is not done acts in a step: only unseen or done agents get here.
        if record is not None or agent_id in self._done_in_earlier_chunks:
            why = "which is already done (its terminated or truncated flag came earlier)"
            fix = "leave done agents out of every later dict"
        else:
            why = "which has never observed in this episode"
            fix = "give the agent an observation before it gets rewards or done flags"
        return (f"{self.env_name} {what} agent {agent_id!r} at env step {self.env_t + 1}, {why}. "
                f"Fix the env: {fix}.")

    def to_numpy(self) -> "MultiAgentEpisode":
        """Turn every agent's lists into arrays (RLlib's `to_numpy()`), so the chunk travels
        between processes as a few arrays per agent; it cannot be stepped any more."""
        for r in self._records.values():  # read-only from here on
            e = r.to_episode()
            r.obs, r.actions, r.rewards, r.extra = (e.observations, e.actions, e.rewards,
                                                    e.extra_model_outputs)
        self._is_numpy = True
        return self

    def __getstate__(self) -> dict:
        # The mapping fn (the runner's bound method) stays behind; the mapping it made travels.
        return {**self.__dict__, "agent_to_module_mapping_fn": None}

    # -- reading ----------------------------------------------------------------------------

    @property
    def agent_episodes(self) -> dict[AgentID, SingleAgentEpisode]:
        """One SingleAgentEpisode (NumPy) per agent seen in this chunk, done agents included."""
        return {a: r.to_episode() for a, r in self._records.items()}

    @property
    def agent_ids(self) -> set[AgentID]:
        return set(self._records)

    @property
    def is_done(self) -> bool:
        return self.is_terminated or self.is_truncated

    def module_for(self, agent_id: AgentID) -> ModuleID:
        """The module that acts for (and learns from) `agent_id` in this episode."""
        return self.agent_to_module_mapping[agent_id]

    def all_agents_done(self) -> bool:
        """Every agent seen so far is done, though the episode is not ("__all__" never came)."""
        seen = self._records or self._done_in_earlier_chunks  # (none yet: agents may still come)
        return bool(seen) and not self.is_done and all(r.done for r in self._records.values())

    def get_agents_to_act(self) -> list[AgentID]:
        """Agents that observed and must act in the next env step."""
        return [a for a, r in self._records.items() if r.ready]

    def get_ready_observations(self) -> list[tuple[AgentID, Any]]:
        """(agent, latest observation) of each agent that must act next: what a runner batches."""
        return [(a, r.obs[-1]) for a, r in self._records.items() if r.ready]

    def __len__(self) -> int:
        """Env steps in this chunk (each agent's own episode counts its own steps)."""
        return self.env_t - self.env_t_started

    def agent_steps(self) -> int:
        """Transitions of all agents in this chunk."""
        return sum(len(r.actions) for r in self._records.values())

    def get_return(self, include_hanging_rewards: bool = False) -> float:
        """Sum of all agents' rewards in this chunk, with `include_hanging_rewards` also the
        rewards of open actions (whose next observation has not come yet)."""
        total = sum(sum(r.rewards) for r in self._records.values())
        if include_hanging_rewards:
            total += sum(r.pending_reward for r in self._records.values())
        return float(total)

    def get_agent_returns(self) -> dict[AgentID, float]:
        """Each agent's sum of rewards in this chunk (closed transitions only)."""
        return {a: float(sum(r.rewards)) for a, r in self._records.items()}

    def cut(self) -> "MultiAgentEpisode":
        """The next chunk of this (not done) episode: live agents start at their last observation,
        and an open action (not observed again yet) moves along with its rewards so far."""
        if self.is_done:
            raise ValueError(f"Episode {self.id_} is done; start a new episode instead of cut().")
        chunk = MultiAgentEpisode(self.id_, agent_to_module_mapping_fn=self.agent_to_module_mapping_fn,
                                  env_t_started=self.env_t, env_name=self.env_name)
        chunk.agent_to_module_mapping = dict(self.agent_to_module_mapping)
        chunk._done_in_earlier_chunks = set(self._done_in_earlier_chunks)
        for agent_id, r in self._records.items():
            if r.done:
                chunk._done_in_earlier_chunks.add(agent_id)
                continue
            new = _AgentRecord(r.obs[-1], t_started=r.t_started + len(r.actions), id_=r.id_)
            new.ready, new.pending = r.ready, r.pending
            new.pending_extra, new.pending_reward = r.pending_extra, r.pending_reward
            chunk._records[agent_id] = new
        return chunk

    def __repr__(self) -> str:
        state = "terminated" if self.is_terminated else "truncated" if self.is_truncated else "ongoing"
        return (f"MultiAgentEpisode(id_={self.id_[:8]}, env_t={self.env_t_started}..{self.env_t}, "
                f"agents={names(self._records)}, return={self.get_return():.1f}, {state})")
