"""SingleAgentEnvRunner: steps a gymnasium vector env into preallocated [T, N] NumPy buffers (no
Python object per step), then slices them into SingleAgentEpisodes. Options cost nothing unless set."""

from functools import partial
from typing import TYPE_CHECKING

import gymnasium as gym
import numpy as np
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv

from rlcourse.core.rl_module.numpy_mlp import to_env_actions
from rlcourse.env.env_context import EnvContext
from rlcourse.env.env_runner import (
    EPISODES_MODE_STEPS,
    EnvRunner,
    build_inference_module,
    first_non_finite,
    raise_if_shape_error,
)
from rlcourse.env.env_runner_state import check_runner_state, get_env_state, set_env_state
from rlcourse.env.registry import EnvCreator
from rlcourse.env.single_agent_episode import SingleAgentEpisode
from rlcourse.utils.serialization import from_plain, to_plain

if TYPE_CHECKING:
    from rlcourse.algorithms.algorithm_config import AlgorithmConfig


def make_vector_env(env_creator: EnvCreator, config: "AlgorithmConfig", worker_index: int = 0
                    ) -> gym.vector.VectorEnv:
    """`num_envs_per_env_runner` sub-envs, each with its own EnvContext (and rebuilt when it fails,
    with `restart_failed_sub_environments`). SYNC steps them in this process, ASYNC each in its own."""
    contexts = [EnvContext(config.env_config, worker_index, i, config.num_env_runners)
                for i in range(config.num_envs_per_env_runner)]
    if config.restart_failed_sub_environments:
        from rlcourse.env.sub_env_restarts import RestartOnFailure
        fns = [partial(RestartOnFailure, env_creator, context,
                       config.num_consecutive_sub_env_failures_tolerance) for context in contexts]
    else:
        fns = [partial(env_creator, context) for context in contexts]
    vector_cls = SyncVectorEnv if config.gym_env_vectorize_mode == "SYNC" else AsyncVectorEnv
    # SAME_STEP: a sub-env resets in the step that ends its episode (the last observation comes in
    # infos["final_obs"]), so no buffer step crosses episodes. copy=False: the runner copies anyway.
    return vector_cls(fns, autoreset_mode=AutoresetMode.SAME_STEP, copy=False)


class SingleAgentEnvRunner(EnvRunner):
    """Collects experience from `num_envs_per_env_runner` sub-envs with the current weights."""

    def __init__(self, config: "AlgorithmConfig", env_creator: EnvCreator | None = None,
                 worker_index: int = 0):
        super().__init__(config, env_creator, worker_index)
        self.env = make_vector_env(self.env_creator, config, worker_index)
        self.num_envs = self.env.num_envs
        self.action_space = self.env.single_action_space
        self.observation_space = self.env.single_observation_space
        if config.env_to_module_connector is not None:
            # Observations pass through the connectors; the module sees (and is built for) their
            # output, which the episodes record, so the Learner trains on what the policy saw.
            from rlcourse.connectors.env_to_module.env_to_module_pipeline import (
                build_env_to_module_pipeline,
            )
            self.env_to_module = build_env_to_module_pipeline(
                config, self.observation_space, self.action_space, self.env)
            self.observation_space = self.env_to_module.observation_space
            self.frame_stacking = self.env_to_module.frame_stacking
        self.module = build_inference_module(config, self.observation_space, self.action_space,
                                             self.seed, worker_index)
        self.hooks, self._obs = None, None  # _obs: the newest observations, set by _reset
        if self.callbacks is not None:
            from rlcourse.callbacks.callbacks import overrides_episode_hooks
            from rlcourse.env.episode_hooks import EpisodeHooks
            if overrides_episode_hooks(type(self.callbacks)):
                self.hooks = EpisodeHooks(self)

    def _set_module_weights(self, weights: dict[str, np.ndarray]) -> None:
        self.module.set_state(weights)

    def _set_epsilon(self, epsilon: float) -> None:
        self.module.head.epsilon = epsilon

    def _initialize_weights(self) -> None:
        from rlcourse.core.rl_module.rl_module import build_module  # torch, in this process only

        module = build_module(self.config, self.observation_space, self.action_space)
        self.set_weights(module.get_state(inference_only=True))

    def get_spaces(self) -> tuple[gym.Space, gym.Space]:
        return self.observation_space, self.action_space

    def _reset(self) -> None:
        try:
            obs, infos = self.env.reset(seed=None if self._num_env_steps_lifetime else self.seed)
        except ValueError as e:
            raise_if_shape_error(self.name, self.env, e)
            raise
        self._obs = self.env_to_module(obs) if self.env_to_module is not None else obs
        if self.frame_stacking:
            self.frame_stacking.push(self._obs)
        if self.hooks:
            self.hooks.on_reset(self._obs, infos)
        self._ids = [SingleAgentEpisode.new_id() for _ in range(self.num_envs)]
        self._t_started, self._running_returns = [0] * self.num_envs, [0.0] * self.num_envs
        if self.module.is_stateful:  # every sub-env starts an episode: each from the initial state
            self.module.reset_state(np.ones(self.num_envs, dtype=bool))
        self._needs_reset = False

    def _sample_steps(self, steps: int, explore: bool, deadline: float | None
                      ) -> list[SingleAgentEpisode]:
        """Run `steps` vector steps into [T, N] buffers, check them for NaNs, slice them into chunks."""
        if self._needs_reset:
            self._reset()
        n_envs, forward = self.num_envs, (self.module.forward_exploration if explore
                                          else self.module.forward_inference)
        connectors, stacking = self.env_to_module, self.frame_stacking
        self._lookback = stacking.lookback() if stacking else None  # frames before obs[0]
        obs = np.empty((steps + 1, *self._obs.shape), dtype=self._obs.dtype)
        rewards = np.empty((steps, n_envs), dtype=np.float32)
        terminated = np.empty((steps, n_envs), dtype=bool)
        truncated = np.empty((steps, n_envs), dtype=bool)
        outputs: dict[str, np.ndarray] = {}
        final_obs: dict[tuple[int, int], np.ndarray] = {}
        failed: set[tuple[int, int]] = set()  # (t, i): sub-env i raised in step t (and was rebuilt)
        obs[0] = self._obs
        self._needs_reset = True  # until this sample is done: an error leaves episodes half-stepped
        for t in range(steps):
            self._check_deadline(deadline)
            out = forward(stacking.stacked if stacking else obs[t])
            if t == 0:
                outputs = {k: np.empty((steps, *v.shape), v.dtype) for k, v in out.items()}
            for k, v in out.items():
                outputs[k][t] = v
            # The env gets actions inside its space; the episode keeps the module's (unclipped,
            # indices 0..n-1), whose log-probabilities the learner computes.
            actions = to_env_actions(out["actions"], self.action_space)
            try:
                next_obs, rewards[t], terminated[t], truncated[t], infos = self.env.step(actions)
            except Exception as e:
                raise_if_shape_error(self.name, self.env, e)
                if not self.config.restart_failed_sub_environments:
                    e.add_note("rlcourse: a sub-env of this EnvRunner raised. To rebuild failing "
                               "sub-envs and drop their broken episodes, set config."
                               "fault_tolerance(restart_failed_sub_environments=True).")
                raise
            obs[t + 1] = connectors(next_obs) if connectors is not None else next_obs
            if stacking:  # SAME_STEP autoreset: an ended sub-env's obs[t + 1] starts its next episode
                stacking.push(obs[t + 1], terminated[t] | truncated[t])
            if self.module.is_stateful:  # sub-envs that reset in this step start a new state
                self.module.reset_state(terminated[t] | truncated[t])
            last_obs = {}  # sub-env -> its ended episode's last obs (processed, as obs[t + 1] is)
            if "final_obs" in infos:  # some sub-env ended an episode (and reset) in this step
                ended = np.flatnonzero(infos["_final_obs"])
                if "_env_failure" in infos["final_info"]:  # rebuilt: its made-up obs is no data
                    broken = np.flatnonzero(infos["final_info"]["_env_failure"])
                    failed.update((t, i) for i in broken)
                    ended = np.setdiff1d(ended, broken)
                last = [infos["final_obs"][i] for i in ended]
                if connectors is not None and last:
                    last = connectors.process_items(last)
                last_obs = dict(zip(ended.tolist(), last, strict=True))
                final_obs.update(((t, i), o) for i, o in last_obs.items())
            if self.hooks:
                self.hooks.on_step(out["actions"], rewards[t], terminated[t], truncated[t], obs[t + 1],
                                   last_obs, infos)
        self._check_finite(obs, rewards, final_obs)
        self._obs, self._needs_reset = obs[steps], False
        self._count_steps(steps * n_envs)
        return self._to_episodes(obs, outputs, rewards, terminated, truncated, final_obs, failed)

    def _check_finite(self, obs: np.ndarray, rewards: np.ndarray,
                      final_obs: dict[tuple[int, int], np.ndarray]) -> None:
        """Raise NonFiniteEnvData for a NaN or infinite reward or obs: one check per [T, N] buffer."""
        for field, values in (("reward", rewards), ("obs", obs)):
            at = first_non_finite(values)
            if at is not None:
                self._non_finite(field, f"sub-env {at[1]}", at[0], values[at[0], at[1]])
        for (t, i), last in final_obs.items():
            if first_non_finite(np.asarray(last)) is not None:
                self._non_finite("obs", f"sub-env {i}", t + 1, last)

    def _to_episodes(self, obs, outputs, rewards, terminated, truncated, final_obs, failed):
        episodes = []
        steps = len(rewards)
        done = terminated | truncated
        for i in range(self.num_envs):
            start = 0
            for t in np.flatnonzero(done[:, i]):
                if (t, i) in failed:  # a broken episode: its last chunk never reaches a batch
                    self._num_sub_env_restarts += 1
                    if self.hooks:
                        self.hooks.custom_data(i, is_done=True)  # its hooks' data goes with it
                    self._next_episode(i)
                else:  # A Discrete env may return a Python int: make it a row of obs's dtype.
                    last = np.asarray(final_obs[t, i], dtype=obs.dtype)[None]
                    ep_obs = np.concatenate([obs[start:t + 1, i], last])
                    # An env may report both at its time limit; a termination means no future.
                    episodes.append(self._make_chunk(i, ep_obs, outputs, rewards, start, t + 1,
                                                     terminated[t, i],
                                                     truncated[t, i] and not terminated[t, i]))
                start = t + 1
            if start < steps:
                episodes.append(self._make_chunk(i, obs[start:, i], outputs, rewards, start, steps,
                                                 False, False))
        return episodes

    def _make_chunk(self, i, ep_obs, outputs, rewards, start, end, is_terminated, is_truncated):
        extra = {k: v[start:end, i] for k, v in outputs.items() if k != "actions"}
        chunk_rewards = rewards[start:end, i]
        if self.config.clip_rewards not in (None, False):  # the Learner trains on clipped rewards
            from rlcourse.connectors.clip_rewards import clip_rewards
            chunk_rewards = clip_rewards(chunk_rewards, self.config.clip_rewards)
        episode = SingleAgentEpisode(ep_obs, outputs["actions"][start:end, i], chunk_rewards,
                                     extra, is_terminated, is_truncated,
                                     id_=self._ids[i], t_started=self._t_started[i])
        if self._lookback is not None and start == 0 and episode.t_started > 0:
            episode.lookback_observations = self._lookback[i]
        if self.hooks:
            episode.custom_data = self.hooks.custom_data(i, episode.is_done)
        self._running_returns[i] += float(rewards[start:end, i].sum())  # the env's, not clipped
        if episode.is_done:
            self._episode_returns.append(self._running_returns[i])
            self._episode_lens.append(episode.t)
            if self.hooks:
                self.hooks.on_episode_end(i, episode)
            self._next_episode(i)
        else:
            self._t_started[i] = episode.t
        return episode

    def _next_episode(self, i: int) -> None:
        """Sub-env i's next chunk starts a new episode."""
        self._ids[i], self._t_started[i] = SingleAgentEpisode.new_id(), 0
        self._running_returns[i] = 0.0

    def _sample_episodes(self, num_episodes: int, explore: bool, deadline: float | None
                         ) -> list[SingleAgentEpisode]:
        """Fresh episodes run to their end; chunks are joined, unfinished ones dropped."""
        self._needs_reset = True
        finished: list[SingleAgentEpisode] = []
        ongoing: dict[str, SingleAgentEpisode] = {}
        while len(finished) < num_episodes:
            for chunk in self._sample_steps(EPISODES_MODE_STEPS, explore, deadline):
                if chunk.id_ in ongoing:
                    chunk = ongoing.pop(chunk.id_).concat_episode(chunk)
                if chunk.is_done:
                    finished.append(chunk)
                else:
                    ongoing[chunk.id_] = chunk
        self._needs_reset = True  # the envs are mid-episode in episodes nobody will see
        return finished[:num_episodes]

    def get_state(self) -> dict:
        """What continues sampling exactly here, as plain data: step count, random generators,
        connector statistics and the running episodes (none before the first sample, after whole
        episodes, or for an ASYNC vector env, whose sub-envs live in other processes)."""
        sync = isinstance(self.env, SyncVectorEnv)
        envs = [get_env_state(env) for env in self.env.envs] if sync else None
        running = sync and not self._needs_reset
        episodes = {"obs": to_plain(self._obs), "ids": self._ids, "t_started": self._t_started,
                    "running_returns": self._running_returns, "envs": envs,
                    **({"module_state": to_plain(self.module.state)} if self.module.is_stateful
                       else {}),  # the LSTM's state per sub-env
                    "hooks": self.hooks.get_state() if self.hooks else None} if running else None
        return {"num_env_steps_lifetime": self._num_env_steps_lifetime,
                "module_rng": to_plain(self.module.rng),
                "episodes": episodes, "envs": None if running else envs,
                "env_to_module": self.env_to_module.get_state() if self.env_to_module else []}

    def _check_state(self, state: dict, where: str) -> None:
        check_runner_state(self, state, where)

    def set_state(self, state: dict) -> None:
        self._num_env_steps_lifetime = state["num_env_steps_lifetime"]
        if state["module_rng"] is not None:
            self.module.rng = from_plain(state["module_rng"])
        if self.env_to_module is not None:
            self.env_to_module.set_state(state.get("env_to_module"))  # none in older checkpoints
        episodes = state["episodes"]
        envs = episodes["envs"] if episodes else state.get("envs")  # no "envs" in older checkpoints
        sync = isinstance(self.env, SyncVectorEnv)
        if sync and envs is not None:
            for env, env_state in zip(self.env.envs, envs, strict=True):
                set_env_state(env, env_state)
        self._needs_reset = episodes is None or not sync
        if self._needs_reset:
            return
        self._obs = from_plain(episodes["obs"])
        if self.frame_stacking:  # earlier frames are not saved: the stacks restart from this one
            self.frame_stacking.push(self._obs)
        self._ids, self._t_started = list(episodes["ids"]), list(episodes["t_started"])
        self._running_returns = list(episodes["running_returns"])
        if self.module.is_stateful:
            self.module.state = from_plain(episodes["module_state"])
        if self.hooks and episodes.get("hooks") is not None:
            self.hooks.set_state(episodes["hooks"])
        elif self.hooks:  # saved without these callbacks: the hooks see the episodes start here
            self.hooks.on_reset(self._obs, {})

    def stop(self) -> None:
        self.env.close()
