"""EnvRunner: steps a gymnasium vector env with an inference-only module and returns episodes.

RLlib calls this class SingleAgentEnvRunner (`rlcourse/env/single_agent_env_runner.py` gives it
that name and import path). One EnvRunner lives in the driver (num_env_runners=0)
or in each Ray actor of an EnvRunnerGroup. `sample()` writes each step into preallocated [T, N]
NumPy buffers (no Python object per step), then slices the buffers into SingleAgentEpisodes.
Beside this file: the module it acts with (inference_module.py), its answer to a group's request
(sample_result.py) and its checkpoint state (env_runner_state.py, a mixin with get_state/set_state).

Sub-envs reset themselves in the same step that ends an episode (gymnasium's SAME_STEP autoreset):
the step returns the new episode's first observation, and the old episode's last one arrives in
`infos["final_obs"]`. So every step in a buffer is a real transition; none crosses an episode boundary.
"""

import math
import os

import gymnasium as gym
import numpy as np
import ray

from rlcourse.connectors.clip_rewards import clip_rewards
from rlcourse.connectors.env_to_module.env_to_module_pipeline import build_env_to_module_pipeline
from rlcourse.core.rl_module.default_model_config import to_env_actions
from rlcourse.env.env_runner_state import EnvRunnerStateMixin
from rlcourse.env.episode_hooks import EPISODE_HOOKS, EpisodeHooks, overrides
from rlcourse.env.finite_check import check_finite_sample
from rlcourse.env.inference_module import build_inference_module
from rlcourse.env.registry import EnvCreator, env_name
from rlcourse.env.sample_result import SampleResult
from rlcourse.env.sample_timeout import check_deadline, sample_deadline
from rlcourse.env.single_agent_episode import SingleAgentEpisode
from rlcourse.env.sub_env_restarts import add_restart_hint
from rlcourse.env.vector_env import make_vector_env
from rlcourse.utils.metrics.metrics_logger import MetricsLogger

EPISODES_MODE_STEPS = 128  # steps per round when sampling whole episodes


class EnvRunner(EnvRunnerStateMixin):
    """Collects experience from `num_envs_per_env_runner` sub-envs with the current weights."""

    def __init__(self, config, env_creator: EnvCreator | None = None, worker_index: int = 0):
        self.config = config
        # Built alone (RLlib: `SingleAgentEnvRunner(config=config)`), a runner makes its own env
        # creator and, when first asked to sample, its own freshly initialized weights.
        self.standalone = env_creator is None
        env_creator = config.get_env_creator() if self.standalone else env_creator
        self.worker_index = worker_index  # 0: the runner in the driver; actors count from 1
        self.name = f"env {env_name(config.env)!r} on " + (
            f"EnvRunner {worker_index}" if worker_index else "the EnvRunner in this process")
        self.seed = None if config.seed is None else config.seed + 10_000 * worker_index
        self.env = make_vector_env(env_creator, config, worker_index)
        self.num_envs = self.env.num_envs
        self.action_space = self.env.single_action_space
        # Observations pass through the connectors; the module sees (and is built for) their output.
        self.env_to_module = build_env_to_module_pipeline(
            config, self.env.single_observation_space, self.action_space, self.env)
        self.observation_space = self.env_to_module.observation_space
        self.module = build_inference_module(config, self.observation_space, self.action_space,
                                             self.seed, worker_index)
        self.callbacks = config.callbacks_class() if config.callbacks_class else None
        self.hooks = (EpisodeHooks(self) if self.callbacks and any(
            overrides(self.callbacks, hook) for hook in EPISODE_HOOKS) else None)
        self.metrics = MetricsLogger()  # what callbacks log here reaches train()'s results
        # The Ray node this runner runs on, when it is an actor (see EnvRunnerGroup.get_node_ids).
        self.node_id = ray.get_runtime_context().get_node_id() if ray.is_initialized() else None
        self.weights_seq_no = -1  # which weights version the module holds; -1: none yet
        self._needs_reset = True
        self._episode_returns: list[float] = []  # finished since the last get_metrics()
        self._episode_lens: list[int] = []
        self._num_env_steps = 0
        self._num_env_steps_lifetime = 0
        self._num_sub_env_restarts = 0  # broken episodes dropped since the last get_metrics()

    # -- weights and health -----------------------------------------------------------------

    def set_weights(self, weights: dict[str, np.ndarray], weights_seq_no: int | None = None,
                    env_to_module_state: list | None = None, epsilon: float | None = None) -> None:
        """Load new policy weights as version `weights_seq_no` (default: the next version), and the
        connectors' merged statistics and the epsilon (of an epsilon-greedy action head: DQN's)
        sent with them. From a remote group they arrive as ObjectRefs that Ray resolves. Versions
        not newer than the one held are ignored, so a late delivery never replaces newer weights."""
        if weights_seq_no is None:
            weights_seq_no = self.weights_seq_no + 1
        if weights_seq_no > self.weights_seq_no:
            self.module.set_state(weights)
            self.env_to_module.set_state(env_to_module_state)
            if epsilon is not None:
                self.module.head.epsilon = epsilon
            self.weights_seq_no = weights_seq_no

    def _initialize_weights(self) -> None:
        """A runner built alone acts with a newly initialized module, as RLlib's does; a group's
        runners never do this: they wait for the learner's weights."""
        from rlcourse.core.rl_module.rl_module import build_module  # torch, in this process only

        module = build_module(self.config, self.observation_space, self.action_space)
        self.set_weights(module.get_state(inference_only=True))

    def ping(self) -> int:
        """Health probe: answers with this process's id (a new id means Ray restarted the actor)."""
        return os.getpid()

    def get_spaces(self) -> tuple[gym.Space, gym.Space]:
        return self.observation_space, self.action_space

    # -- sampling ---------------------------------------------------------------------------

    def sample(self, num_timesteps: int | None = None, num_episodes: int | None = None,
               explore: bool | None = None) -> list[SingleAgentEpisode]:
        """Step all sub-envs; return episode chunks covering at least `num_timesteps` steps, or
        `num_episodes` complete episodes. With neither, `rollout_fragment_length` steps per sub-env.
        In the driver's process, a request ends with SampleTimeoutError after `sample_timeout_s`
        (see sample_timeout.py).
        """
        if num_timesteps is not None and num_episodes is not None:
            raise ValueError("sample(): pass num_timesteps or num_episodes, not both.")
        if self.weights_seq_no < 0 and self.standalone:
            self._initialize_weights()
        if self.weights_seq_no < 0:
            raise RuntimeError("This EnvRunner has no policy weights yet: call set_weights() with a "
                               "Learner's get_weights(inference_only=True) first (an Algorithm "
                               "does this for its runners).")
        explore = self.config.explore if explore is None else explore
        deadline = sample_deadline(self.config, self.worker_index)
        if num_episodes is not None:
            episodes = self._sample_episodes(num_episodes, explore, deadline)
        else:
            steps = (self.config.get_rollout_fragment_length() if num_timesteps is None
                     else math.ceil(num_timesteps / self.num_envs))
            episodes = self._sample_steps(steps, explore, deadline)
        if self.callbacks:
            self.callbacks.on_sample_end(env_runner=self, metrics_logger=self.metrics,
                                         samples=episodes)
        return episodes

    def sample_and_get_metrics(self, weights: dict[str, np.ndarray] | None = None,
                               weights_seq_no: int = -1, env_to_module_state: list | None = None,
                               epsilon: float | None = None, **kwargs) -> SampleResult:
        """Take `weights` if they are newer than ours, then `sample()` and `get_metrics()`.

        The group's requests carry its latest weights (one ObjectRef, resolved by Ray), so a runner
        that Ray has just restarted, and that missed the last sync_weights, catches up first.
        """
        if weights is not None:
            self.set_weights(weights, weights_seq_no, env_to_module_state, epsilon)
        episodes = self.sample(**kwargs)
        return SampleResult(episodes, self.get_metrics(), self.weights_seq_no, os.getpid(),
                            self.env_to_module.pop_buffers())

    def _reset(self) -> None:
        seed = self.seed if self._num_env_steps_lifetime == 0 else None
        obs, infos = self.env.reset(seed=seed)
        self._obs = self.env_to_module(obs)
        if self.hooks:
            self.hooks.on_reset(self._obs, infos)
        self._ids = [SingleAgentEpisode.new_id() for _ in range(self.num_envs)]
        self._t_started = [0] * self.num_envs
        self._running_returns = [0.0] * self.num_envs
        self._needs_reset = False

    def _sample_steps(self, steps: int, explore: bool, deadline: float | None
                      ) -> list[SingleAgentEpisode]:
        """Run `steps` vector steps into [T, N] buffers, check them for NaNs (finite_check.py),
        then slice them into episode chunks."""
        if self._needs_reset:
            self._reset()
        n_envs, forward = self.num_envs, (self.module.forward_exploration if explore
                                          else self.module.forward_inference)
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
            check_deadline(deadline, self.config, self.name)
            out = forward(obs[t])
            if t == 0:
                outputs = {k: np.empty((steps, *v.shape), v.dtype) for k, v in out.items()}
            for k, v in out.items():
                outputs[k][t] = v
            # The env gets actions inside its space; the episode keeps the module's (unclipped,
            # indices 0..n-1), whose log-probabilities the learner computes.
            actions = to_env_actions(out["actions"], self.action_space)
            try:
                next_obs, rewards[t], terminated[t], truncated[t], infos = self.env.step(actions)
                obs[t + 1] = self.env_to_module(next_obs)
            except Exception as e:
                add_restart_hint(e)
                raise
            if self.hooks:
                self.hooks.on_step(out["actions"], rewards[t], terminated[t], truncated[t], obs[t + 1],
                                   infos)
            if "final_obs" in infos:  # some sub-env ended an episode (and reset) in this step
                ended = np.flatnonzero(infos["_final_obs"])  # their last obs: processed, too
                last = self.env_to_module.process_items([infos["final_obs"][i] for i in ended])
                final_obs.update(((t, i), o) for i, o in zip(ended, last, strict=True))
                if "_env_failure" in infos["final_info"]:
                    failed.update((t, i) for i in np.flatnonzero(infos["final_info"]["_env_failure"]))
        check_finite_sample(obs, rewards, final_obs, self.name)
        self._obs, self._needs_reset = obs[steps], False
        self._num_env_steps += steps * n_envs
        self._num_env_steps_lifetime += steps * n_envs
        return self._to_episodes(obs, outputs, rewards, terminated, truncated, final_obs, failed)

    def _to_episodes(self, obs, outputs, rewards, terminated, truncated, final_obs, failed):
        episodes = []
        steps = len(rewards)
        done = terminated | truncated
        for i in range(self.num_envs):
            start = 0
            for t in np.flatnonzero(done[:, i]):
                if (t, i) in failed:  # a broken episode: its last chunk never reaches a batch
                    self._drop_broken_episode(i)
                    start = t + 1
                    continue
                # A Discrete env may return a Python int: make it a row of the buffer's dtype.
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
        episode = SingleAgentEpisode(ep_obs, outputs["actions"][start:end, i],
                                     clip_rewards(rewards[start:end, i], self.config.clip_rewards),
                                     extra, is_terminated, is_truncated,
                                     id_=self._ids[i], t_started=self._t_started[i])
        if self.hooks:
            episode.custom_data = self.hooks.custom_data(i, episode.is_done)
        self._running_returns[i] += float(rewards[start:end, i].sum())  # the env's, not clipped
        if episode.is_done:
            self._episode_returns.append(self._running_returns[i])
            self._episode_lens.append(episode.t)
            if self.hooks:
                self.hooks.on_episode_end(i, episode)
            self._ids[i], self._t_started[i] = SingleAgentEpisode.new_id(), 0
            self._running_returns[i] = 0.0
        else:
            self._t_started[i] = episode.t
        return episode

    def _drop_broken_episode(self, i: int) -> None:
        self._num_sub_env_restarts += 1
        if self.hooks:
            self.hooks.custom_data(i, is_done=True)  # its hooks' data goes with it
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

    # -- metrics and life cycle (get_state / set_state: env_runner_state.py) ----------------

    def get_metrics(self) -> dict:
        """Episodes finished, steps taken and custom metrics logged since the last call (then
        forgets them)."""
        metrics = {"episode_returns": self._episode_returns, "episode_lens": self._episode_lens,
                   "num_env_steps_sampled": self._num_env_steps,
                   "num_sub_env_restarts": self._num_sub_env_restarts,
                   "custom_metrics": self.metrics.pop_logged()}
        self._episode_returns, self._episode_lens, self._num_env_steps = [], [], 0
        self._num_sub_env_restarts = 0
        return metrics

    def stop(self) -> None:
        self.env.close()
