"""MultiAgentEnvRunner: steps copies of a MultiAgentEnv with one inference module per module id.

The same public face as EnvRunner (`set_weights`, `sample`, `get_metrics`, `ping`, `get_spaces`,
`get_state`), so an EnvRunnerGroup can hold either. In each step it asks every sub-env's episode
which agents must act, groups their observations by module (`policy_mapping_fn(agent_id, episode)`,
fixed per agent and episode) and runs ONE forward pass per module over all sub-envs, then hands each
sub-env its action dict. Sub-envs reset in the step that ends their episode (like SAME_STEP).
`sample()` returns MultiAgentEpisodes (as NumPy, `to_numpy()`); an unfinished one is `cut()` and
continues in the next call.
Weights arrive as {module_id: weights}; the default modules run in NumPy (no torch here).
"""

import math
import os
from collections.abc import Callable

import gymnasium as gym
import numpy as np
import ray

from rlcourse.core.rl_module.default_model_config import to_env_actions
from rlcourse.core.rl_module.multi_rl_module_spec import (
    module_config,
    resolve_multi_rl_module_spec,
    space_mismatch_error,
    spaces_match,
    unknown_module_error,
)
from rlcourse.env.env_context import EnvContext
from rlcourse.env.inference_module import build_inference_module
from rlcourse.env.multi_agent_env import MultiAgentEnv, names
from rlcourse.env.multi_agent_episode import (
    ModuleID,
    MultiAgentEpisode,
    default_agent_to_module_mapping_fn,
)
from rlcourse.env.registry import EnvCreator, env_name
from rlcourse.env.sample_result import SampleResult
from rlcourse.env.sample_timeout import check_deadline, sample_deadline
from rlcourse.utils.serialization import from_plain, to_plain

EPISODES_MODE_STEPS = 128  # env steps per round when sampling whole episodes


class MultiAgentEnvRunner:
    """Collects multi-agent experience from `num_envs_per_env_runner` copies of the env."""

    def __init__(self, config, env_creator: EnvCreator | None = None, worker_index: int = 0):
        self.config = config
        self.standalone = env_creator is None
        env_creator = config.get_env_creator() if self.standalone else env_creator
        self.worker_index = worker_index
        self.env_name = env_name(config.env)
        self.name = f"env {self.env_name!r} on " + (
            f"MultiAgentEnvRunner {worker_index}" if worker_index else "the runner in this process")
        self.seed = None if config.seed is None else config.seed + 10_000 * worker_index
        self.envs = [env_creator(EnvContext(config.env_config, worker_index, i,
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
        self.module_spaces = self.spec.spaces()
        self.modules = {
            mid: build_inference_module(module_config(config, mid, self.spec, k), obs_space,
                                        act_space, None if self.seed is None else self.seed + k)
            for k, (mid, (obs_space, act_space)) in enumerate(self.module_spaces.items())}
        # The Ray node this runner runs on, when it is an actor (see EnvRunnerGroup.get_node_ids).
        self.node_id = ray.get_runtime_context().get_node_id() if ray.is_initialized() else None
        self._checked: set[tuple] = set()  # (agent, module) pairs whose spaces were compared
        self.weights_seq_no = -1
        self._needs_reset = True
        self._num_env_steps_lifetime = 0
        self._reset_metrics()

    # -- weights and health -----------------------------------------------------------------

    def set_weights(self, weights: dict[ModuleID, dict[str, np.ndarray]],
                    weights_seq_no: int | None = None) -> None:
        """Load {module_id: weights} as version `weights_seq_no`; modules left out keep theirs."""
        unknown = set(weights) - set(self.modules)
        if unknown:
            raise ValueError(f"set_weights(): no module {sorted(map(repr, unknown))[0]} on this "
                             f"runner; its modules are {names(self.modules)}. Weights "
                             "go as {module_id: module weights}.")
        if weights_seq_no is None:
            weights_seq_no = self.weights_seq_no + 1
        if weights_seq_no > self.weights_seq_no:
            for module_id, module_weights in weights.items():
                self.modules[module_id].set_state(module_weights)
            self.weights_seq_no = weights_seq_no

    def _initialize_weights(self) -> None:
        """A runner built alone acts with freshly initialized modules, as RLlib's does."""
        from rlcourse.core.rl_module.multi_rl_module import build_multi_rl_module  # torch

        self.set_weights(build_multi_rl_module(self.config, self.spec).get_state(inference_only=True))

    def ping(self) -> int:
        return os.getpid()

    def get_spaces(self) -> dict[ModuleID, tuple[gym.Space, gym.Space]]:
        """{module_id: (observation_space, action_space)}."""
        return dict(self.module_spaces)

    # -- sampling ---------------------------------------------------------------------------

    def sample(self, num_timesteps: int | None = None, num_episodes: int | None = None,
               explore: bool | None = None) -> list[MultiAgentEpisode]:
        """Step all sub-envs; return episode chunks covering at least `num_timesteps` env steps, or
        `num_episodes` complete episodes; with neither, `rollout_fragment_length` steps per sub-env."""
        if num_timesteps is not None and num_episodes is not None:
            raise ValueError("sample(): pass num_timesteps or num_episodes, not both.")
        if self.weights_seq_no < 0 and self.standalone:
            self._initialize_weights()
        if self.weights_seq_no < 0:
            raise RuntimeError("This MultiAgentEnvRunner has no weights yet: call set_weights("
                               "{module_id: weights}) first (an Algorithm does this).")
        explore = self.config.explore if explore is None else explore
        deadline = sample_deadline(self.config, self.worker_index)
        if num_episodes is not None:
            return self._sample_episodes(num_episodes, explore, deadline)
        steps = (self.config.get_rollout_fragment_length() if num_timesteps is None
                 else math.ceil(num_timesteps / self.num_envs))
        if self._needs_reset:
            self._reset()
        episodes = self._run(steps, explore, deadline)
        for i, episode in enumerate(self._episodes):
            self._count_chunk(i, episode)
            if len(episode):
                episodes.append(episode)
            self._episodes[i] = episode.cut()
        return [episode.to_numpy() for episode in episodes]

    def sample_and_get_metrics(self, weights: dict | None = None, weights_seq_no: int = -1,
                               **kwargs) -> SampleResult:
        """Take `weights` if newer, then `sample()` and `get_metrics()` (as EnvRunner does)."""
        if weights is not None:
            self.set_weights(weights, weights_seq_no)
        episodes = self.sample(**kwargs)
        return SampleResult(episodes, self.get_metrics(), self.weights_seq_no, os.getpid())

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
        observations, infos = self.envs[i].reset(seed=seed)
        episode = MultiAgentEpisode(agent_to_module_mapping_fn=self._mapping,
                                    env_name=self.env_name)
        episode.add_env_reset(observations, infos)
        return episode

    def _reset(self) -> None:
        first = self.seed is not None and not self._num_env_steps_lifetime  # seeded only once
        self._episodes = [self._new_episode(i, self.seed + i if first else None)
                          for i in range(self.num_envs)]
        self._running = [{} for _ in range(self.num_envs)]  # per-agent returns across chunks
        self._needs_reset = False

    def _run(self, steps: int, explore: bool, deadline: float | None) -> list[MultiAgentEpisode]:
        """`steps` env steps in every sub-env, one forward pass per module per step; returns the
        episodes that ended."""
        done: list[MultiAgentEpisode] = []
        forwards = {mid: (m.forward_exploration if explore else m.forward_inference)
                    for mid, m in self.modules.items()}
        discrete = {mid: isinstance(spaces[1], gym.spaces.Discrete)
                    for mid, spaces in self.module_spaces.items()}
        self._needs_reset = True  # until this sample is done: an error leaves episodes half-stepped
        for _ in range(steps):
            check_deadline(deadline, self.config, self.name)
            batches: dict[ModuleID, tuple[list, list]] = {}
            for i, episode in enumerate(self._episodes):
                mapping = episode.agent_to_module_mapping
                for agent_id, obs in episode.get_ready_observations():
                    batch = batches.get(mapping[agent_id])
                    if batch is None:
                        batch = batches[mapping[agent_id]] = ([], [])
                    batch[0].append(obs)
                    batch[1].append((i, agent_id))
            env_actions = [{} for _ in range(self.num_envs)]
            actions = [{} for _ in range(self.num_envs)]
            extras = [{} for _ in range(self.num_envs)]
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
        n = steps * self.num_envs
        self._num_env_steps += n
        self._num_env_steps_lifetime += n
        return done

    def _finish(self, i: int, episode: MultiAgentEpisode) -> None:
        """Record a finished episode's returns (all its chunks): in total, per agent, per module."""
        running = self._running[i]
        for agent_id, ret in episode.get_agent_returns().items():
            running[agent_id] = running.get(agent_id, 0.0) + ret
        self._episode_returns.append(sum(running.values()))
        self._episode_lens.append(episode.env_t)
        for agent_id, ret in running.items():
            self._agent_returns.setdefault(agent_id, []).append(ret)
            module_id = episode.module_for(agent_id)
            self._module_returns.setdefault(module_id, []).append(ret)
        self._running[i] = {}

    def _count_chunk(self, i: int, episode: MultiAgentEpisode) -> None:
        """Add a chunk that goes on in the next sample() to its episode's running returns."""
        running = self._running[i]
        for agent_id, ret in episode.get_agent_returns().items():
            running[agent_id] = running.get(agent_id, 0.0) + ret

    def _sample_episodes(self, num_episodes: int, explore: bool, deadline: float | None
                         ) -> list[MultiAgentEpisode]:
        """Fresh episodes, each run to its end in one piece (no cuts); unfinished ones dropped."""
        self._reset()
        finished: list[MultiAgentEpisode] = []
        while len(finished) < num_episodes:
            finished += self._run(EPISODES_MODE_STEPS, explore, deadline)
        self._needs_reset = True  # the envs are mid-episode in episodes nobody will see
        return [episode.to_numpy() for episode in finished[:num_episodes]]

    # -- metrics and state ------------------------------------------------------------------

    def _reset_metrics(self) -> None:
        self._episode_returns: list[float] = []
        self._episode_lens: list[int] = []
        self._agent_returns: dict = {}
        self._module_returns: dict[ModuleID, list[float]] = {}
        self._num_env_steps = 0

    def get_metrics(self) -> dict:
        """Episodes finished since the last call: returns (all agents together, per agent, per
        module), lengths in env steps, and env steps sampled; then forgets them."""
        metrics = {"episode_returns": self._episode_returns, "episode_lens": self._episode_lens,
                   "agent_episode_returns": self._agent_returns,
                   "module_episode_returns": self._module_returns,
                   "num_env_steps_sampled": self._num_env_steps}
        self._reset_metrics()
        return metrics

    def get_state(self) -> dict:
        """Step count and the modules' random generators; episodes restart after a restore."""
        return {"num_env_steps_lifetime": self._num_env_steps_lifetime,
                "module_rngs": {mid: to_plain(m.rng) for mid, m in self.modules.items()
                                if hasattr(m, "rng")}}

    def set_state(self, state: dict) -> None:
        self._num_env_steps_lifetime = state["num_env_steps_lifetime"]
        for mid, rng in state["module_rngs"].items():
            self.modules[mid].rng = from_plain(rng)
        self._needs_reset = True

    def stop(self) -> None:
        for env in self.envs:
            env.close()
