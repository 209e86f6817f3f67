"""MultiAgentEnvRunner: steps copies of a MultiAgentEnv with one inference module per module id,
one forward pass per module per step; connectors, reward clipping, episode hooks and sub-env restarts
are single-agent only (`AlgorithmConfig.validate()` refuses them here)."""

from collections.abc import Callable
from typing import TYPE_CHECKING

import gymnasium as gym
import numpy as np

from rlcourse.core.rl_module.multi_rl_module_spec import (
    check_box_observations,
    module_config,
    resolve_multi_rl_module_spec,
    space_mismatch_error,
    spaces_match,
    unknown_module_error,
)
from rlcourse.core.rl_module.numpy_mlp import to_env_actions
from rlcourse.env.env_context import EnvContext
from rlcourse.env.env_runner import (
    EPISODES_MODE_STEPS,
    EnvRunner,
    build_inference_module,
    first_non_finite,
)
from rlcourse.env.env_runner_state import check_module_rngs
from rlcourse.env.multi_agent_env import MultiAgentEnv, names
from rlcourse.env.multi_agent_episode import (
    ModuleID,
    MultiAgentEpisode,
    default_agent_to_module_mapping_fn,
)
from rlcourse.env.registry import EnvCreator
from rlcourse.utils.serialization import from_plain, to_plain

if TYPE_CHECKING:
    from rlcourse.algorithms.algorithm_config import AlgorithmConfig


class MultiAgentEnvRunner(EnvRunner):
    """Collects multi-agent experience from `num_envs_per_env_runner` copies of the env, as NumPy
    MultiAgentEpisodes; an unfinished one is `cut()` and goes on in the next call."""

    def __init__(self, config: "AlgorithmConfig", env_creator: EnvCreator | None = None,
                 worker_index: int = 0):
        super().__init__(config, env_creator, worker_index)
        self.envs = [self.env_creator(EnvContext(config.env_config, worker_index, i,
                                                 config.num_env_runners))
                     for i in range(config.num_envs_per_env_runner)]
        if not isinstance(self.envs[0], MultiAgentEnv):
            raise TypeError(f"Env {self.env_name!r} is a {type(self.envs[0]).__name__}, not a "
                            "MultiAgentEnv: a multi-agent runner needs the dict API (wrap a "
                            "single-agent env with make_multi_agent).")
        self.num_envs = len(self.envs)
        self.policy_mapping_fn: Callable = (config.policy_mapping_fn
                                            or default_agent_to_module_mapping_fn)
        self.spec = resolve_multi_rl_module_spec(config.policies, self.policy_mapping_fn,
                                                 self.envs[0], self.env_name)
        check_box_observations(config, self.spec)
        self.module_spaces = self.spec.spaces()
        self.modules = {
            mid: build_inference_module(module_config(config, mid, self.spec, k), obs_space,
                                        act_space, None if self.seed is None else self.seed + k)
            for k, (mid, (obs_space, act_space)) in enumerate(self.module_spaces.items())}
        self._checked: set[tuple] = set()  # (agent, module) pairs whose spaces were compared

    def set_weights(self, weights: dict[ModuleID, dict[str, np.ndarray]],
                    weights_seq_no: int | None = None, env_to_module_state: list | None = None,
                    epsilon: float | None = None) -> None:
        """As EnvRunner's, with weights as {module_id: weights}; modules left out keep theirs."""
        unknown = set(weights) - set(self.modules)
        if unknown:
            raise ValueError(f"set_weights(): no module {sorted(map(repr, unknown))[0]} on this "
                             f"runner; its modules are {names(self.modules)}. Weights "
                             "go as {module_id: module weights}.")
        super().set_weights(weights, weights_seq_no, env_to_module_state, epsilon)

    def _set_module_weights(self, weights: dict[ModuleID, dict[str, np.ndarray]]) -> None:
        for module_id, module_weights in weights.items():
            self.modules[module_id].set_state(module_weights)

    def _initialize_weights(self) -> None:
        from rlcourse.core.rl_module.multi_rl_module import build_multi_rl_module  # torch

        self.set_weights(build_multi_rl_module(self.config, self.spec).get_state(inference_only=True))

    def get_spaces(self) -> dict[ModuleID, tuple[gym.Space, gym.Space]]:
        """{module_id: (observation_space, action_space)}."""
        return dict(self.module_spaces)

    def _sample_steps(self, steps: int, explore: bool, deadline: float | None
                      ) -> list[MultiAgentEpisode]:
        """The episodes that ended within `steps` env steps, and cut chunks of those going on."""
        if self._needs_reset:
            self._reset()
        episodes = self._run(steps, explore, deadline)
        for i, episode in enumerate(self._episodes):
            self._add_returns(i, episode)
            if len(episode):
                episodes.append(episode)
            self._episodes[i] = episode.cut()
        return self._to_numpy(episodes)

    def _mapping(self, agent_id, episode: MultiAgentEpisode) -> ModuleID:
        """The config's policy_mapping_fn, checked: a known module with this agent's spaces."""
        module_id = self.policy_mapping_fn(agent_id, episode)
        if (agent_id, module_id) not in self._checked:
            if module_id not in self.modules:
                raise unknown_module_error(agent_id, module_id, self.modules)
            env = self.envs[0]
            have = (env.get_observation_space(agent_id), env.get_action_space(agent_id))
            if not spaces_match(have, self.module_spaces[module_id]):
                raise space_mismatch_error(agent_id, module_id, have,
                                           self.module_spaces[module_id], "built at the start")
            self._checked.add((agent_id, module_id))
        return module_id

    def _new_episode(self, i: int, seed: int | None = None) -> MultiAgentEpisode:
        episode = MultiAgentEpisode(agent_to_module_mapping_fn=self._mapping, env_name=self.env_name)
        episode.add_env_reset(*self.envs[i].reset(seed=seed))
        return episode

    def _reset(self) -> None:
        first = self.seed is not None and not self._num_env_steps_lifetime  # seeded only once
        self._episodes = [self._new_episode(i, self.seed + i if first else None)
                          for i in range(self.num_envs)]
        self._running = [{} for _ in range(self.num_envs)]  # per-agent returns across chunks
        self._needs_reset = False

    def _run(self, steps: int, explore: bool, deadline: float | None) -> list[MultiAgentEpisode]:
        """`steps` env steps in every sub-env, grouping the ready agents' observations by module
        (`policy_mapping_fn`, fixed per agent and episode); returns the episodes that ended."""
        done: list[MultiAgentEpisode] = []
        forwards = {mid: (m.forward_exploration if explore else m.forward_inference)
                    for mid, m in self.modules.items()}
        discrete = {mid: isinstance(spaces[1], gym.spaces.Discrete)
                    for mid, spaces in self.module_spaces.items()}
        self._needs_reset = True  # until this sample is done: an error leaves episodes half-stepped
        for _ in range(steps):
            self._check_deadline(deadline)
            batches: dict[ModuleID, tuple[list, list]] = {}
            for i, episode in enumerate(self._episodes):
                mapping = episode.agent_to_module_mapping
                ready = episode.get_ready_observations()
                if not ready and episode.all_agents_done():
                    self._never_ends(i, episode)
                for agent_id, obs in ready:
                    batch = batches.get(mapping[agent_id])
                    if batch is None:
                        batch = batches[mapping[agent_id]] = ([], [])
                    batch[0].append(obs)
                    batch[1].append((i, agent_id))
            env_actions = [{} for _ in self.envs]  # per sub-env: agent -> action for the env
            actions = [{} for _ in self.envs]  # ... and the module's action, for the episode
            extras = [{} for _ in self.envs]  # ... and the module's other outputs (logp, ...)
            for mid, (obs_list, who) in batches.items():
                out = forwards[mid](np.stack(obs_list))
                module_actions = out["actions"]
                to_env = to_env_actions(module_actions, self.module_spaces[mid][1])
                # The env gets NumPy scalars (gymnasium checks those faster than Python ints); the
                # episode keeps Python scalars (cheaper to gather); Box actions stay rows.
                listed = module_actions.tolist() if discrete[mid] else module_actions
                logp = out["action_logp"].tolist() if [*out] == ["actions", "action_logp"] else None
                extra_items = [] if logp is not None else [
                    (key, out[key].tolist()) for key in out if key != "actions"]
                for k, (i, agent_id) in enumerate(who):
                    env_actions[i][agent_id] = to_env[k]
                    actions[i][agent_id] = listed[k]
                    # (the common case, PPO's outputs, without a comprehension per agent)
                    extras[i][agent_id] = ({"action_logp": logp[k]} if logp is not None else
                                           {key: values[k] for key, values in extra_items})
            for i, env in enumerate(self.envs):
                obs, rewards, terminateds, truncateds, infos = env.step(env_actions[i])
                episode = self._episodes[i]
                episode.add_env_step(obs, actions[i], rewards, terminateds, truncateds, infos,
                                     extras[i])
                if episode.is_done:
                    self._finish(i, episode)
                    done.append(episode)
                    self._episodes[i] = self._new_episode(i)
        self._needs_reset = False
        self._count_steps(steps * self.num_envs)
        return done

    def _never_ends(self, i: int, episode: MultiAgentEpisode) -> None:
        """Refuse an episode whose agents are all done without "__all__": it would step on with
        empty dicts forever, giving no agent steps and no episodes."""
        raise ValueError(
            f"The {self.name}, sub-env {i}: every agent of episode {episode.id_[:8]} is done "
            f"(terminated or truncated) at env step {episode.env_t}, but terminateds['__all__'] and "
            "truncateds['__all__'] stay False, so the episode never ends and nobody acts again. "
            "Fix the env: set terminateds['__all__']=True (or truncateds['__all__']=True) in the "
            "step where the last agent is done.")

    def _finish(self, i: int, episode: MultiAgentEpisode) -> None:
        """Record a finished episode's returns (all its chunks): in total, per agent, per module."""
        running = self._add_returns(i, episode)
        self._episode_returns.append(sum(running.values()))
        self._episode_lens.append(episode.env_t)
        for agent_id, ret in running.items():
            self._agent_returns.setdefault(agent_id, []).append(ret)
            self._module_returns.setdefault(episode.module_for(agent_id), []).append(ret)
        self._running[i] = {}

    def _add_returns(self, i: int, episode: MultiAgentEpisode) -> dict:
        """Add a chunk's rewards to sub-env i's running returns per agent; returns those."""
        running = self._running[i]
        for agent_id, ret in episode.get_agent_returns().items():
            running[agent_id] = running.get(agent_id, 0.0) + ret
        return running

    def _sample_episodes(self, num_episodes: int, explore: bool, deadline: float | None
                         ) -> list[MultiAgentEpisode]:
        """Fresh episodes, each run to its end in one piece (no cuts); unfinished ones dropped."""
        self._reset()
        finished: list[MultiAgentEpisode] = []
        while len(finished) < num_episodes:
            finished += self._run(EPISODES_MODE_STEPS, explore, deadline)
        self._needs_reset = True  # the envs are mid-episode in episodes nobody will see
        return self._to_numpy(finished[:num_episodes])

    def _to_numpy(self, episodes: list[MultiAgentEpisode]) -> list[MultiAgentEpisode]:
        """The episodes as NumPy (`to_numpy()`), each agent's rewards and observations checked for
        NaN or infinite values (NonFiniteEnvData), one `np.isfinite` per array."""
        for episode in episodes:
            for agent_id, agent_episode in episode.to_numpy().agent_episodes.items():
                for field, values in (("reward", agent_episode.rewards),
                                      ("obs", agent_episode.observations)):
                    at = first_non_finite(values)
                    if at is not None:
                        self._non_finite(field, f"agent {agent_id!r} of episode {episode.id_[:8]}",
                                         agent_episode.t_started + at[0], values[at[0]],
                                         restartable=False)
        return episodes

    def _reset_metrics(self) -> None:
        super()._reset_metrics()
        self._agent_returns: dict = {}
        self._module_returns: dict[ModuleID, list[float]] = {}

    def get_metrics(self) -> dict:
        """As EnvRunner's, plus the finished episodes' returns per agent and per module."""
        per_agent = {"agent_episode_returns": self._agent_returns,
                     "module_episode_returns": self._module_returns}
        return {**super().get_metrics(), **per_agent}

    def get_state(self) -> dict:
        """Step count and the modules' random generators; episodes restart after a restore."""
        return {"num_env_steps_lifetime": self._num_env_steps_lifetime,
                "module_rngs": {mid: to_plain(m.rng) for mid, m in self.modules.items()}}

    def _check_state(self, state: dict, where: str) -> None:
        check_module_rngs(state, self.modules, where)

    def set_state(self, state: dict) -> None:
        self._num_env_steps_lifetime = state["num_env_steps_lifetime"]
        for mid, rng in state["module_rngs"].items():
            self.modules[mid].rng = from_plain(rng)
        self._needs_reset = True

    def stop(self) -> None:
        for env in self.envs:
            env.close()
