"""LearnerGroup: one Learner in this process, or N Learner actors, each updating on its shard of
the batch and all-reducing gradients (`Learner.apply_gradients`). Multi-agent: each learner is a
MultiAgentLearner. No torch here: the Learner class the config names imports it."""

import math
import os
import shutil
import tempfile
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
import ray
from ray.exceptions import RayActorError, RayTaskError

from rlcourse.core import ALL_MODULES, DEFAULT_MODULE_ID
from rlcourse.core.rl_module.default_model_config import lstm_settings
from rlcourse.core.rl_module.multi_rl_module_spec import MultiRLModuleSpec, check_trains_answer
from rlcourse.env.multi_agent_episode import ModuleID, MultiAgentEpisode
from rlcourse.env.single_agent_episode import SingleAgentEpisode
from rlcourse.utils.checkpoints import CheckpointError
from rlcourse.utils.resources import learner_options
from rlcourse.utils.validation import ConfigError, fail

if TYPE_CHECKING:
    from rlcourse.algorithms.algorithm_config import AlgorithmConfig

STARTUP_TIMEOUT_S = 180


def shard_episodes(episodes: list[SingleAgentEpisode], num_shards: int
                   ) -> list[list[SingleAgentEpisode]]:
    """Split episodes into `num_shards` lists with about equal numbers of steps (longest first)."""
    shards: list[list[SingleAgentEpisode]] = [[] for _ in range(num_shards)]
    sizes = [0] * num_shards
    for episode in sorted(episodes, key=len, reverse=True):
        i = int(np.argmin(sizes))
        shards[i].append(episode)
        sizes[i] += len(episode)
    return shards


def episodes_by_module(config: Any, episodes: list[MultiAgentEpisode]
                       ) -> dict[ModuleID, list[SingleAgentEpisode]]:
    """Each module's agent episodes (chunks with a step), for the modules `policies_to_train`
    lets learn; an agent's steps go to the module that acted for it in that episode."""
    by_module: dict[ModuleID, list[SingleAgentEpisode]] = {}
    for episode in episodes:
        for agent_id, agent_episode in episode.agent_episodes.items():
            if len(agent_episode):
                by_module.setdefault(episode.module_for(agent_id), []).append(agent_episode)
    # Sorted, so that data-parallel learners update the modules in the same order.
    return {mid: by_module[mid] for mid in sorted(by_module) if _trains(config, mid, episodes)}


def _trains(config: Any, module_id: ModuleID, episodes: list[MultiAgentEpisode]) -> bool:
    """Whether `policies_to_train` (None: every module) lets `module_id` learn from `episodes`."""
    to_train = config.policies_to_train
    if not callable(to_train):
        return to_train is None or module_id in to_train
    return check_trains_answer(config, module_id, to_train(module_id, episodes), fail)


def num_minibatches(config: Any, num_steps: int, num_learners: int) -> int:
    """Minibatches per epoch for a module with `num_steps` agent steps: each learner's share cut
    into minibatches of about `minibatch_size` (RLlib sizes minibatches per module)."""
    if config.minibatch_size is None:
        return 1
    return max(1, math.ceil(num_steps / max(1, num_learners) / config.minibatch_size))


def _merge(results: list[dict]) -> dict:
    """Learners' results: statistics averaged, per-row arrays (DQN's td_error) joined, steps summed."""
    merged = {k: (np.concatenate([r[k] for r in results]) if isinstance(v, np.ndarray)
                  else float(np.mean([r[k] for r in results]))) for k, v in results[0].items()}
    merged["num_env_steps_trained"] = sum(r["num_env_steps_trained"] for r in results)
    return merged


def _rng_name(name: Callable[[str], str], i: int, key: str) -> str:
    """Learner i's field `key`, named as in the LearnerGroup's state (its RNG is rngs[i])."""
    return f"{name('rngs')}[{i}]" if key == "rng" else name(key)


class LearnerFailure(RuntimeError):
    """A Learner actor died (learners are not restarted)."""


class LearnerGroup:
    """Runs `Learner.update` on the local Learner or on all Learner actors at once."""

    def __init__(self, config: "AlgorithmConfig", observation_space: gym.Space | None = None,
                 action_space: gym.Space | None = None, *,
                 module_spec: MultiRLModuleSpec | None = None):
        self.config = config
        self.module_spec = module_spec  # multi-agent: a MultiAgentLearner with one Learner per module
        if module_spec is not None:  # (Learners import torch: here, not where runners import us)
            from rlcourse.core.learner.multi_agent_learner import MultiAgentLearner
            learner_cls, args = MultiAgentLearner, (config, module_spec)
        else:
            learner_cls = config.get_default_learner_class()
            args = (config, observation_space, action_space)
        self.local_learner = None
        self.remote_learners = []
        self._store_dir: str | None = None
        self._iterators: list | None = None  # those the learners keep (update_from_batch)
        if config.num_learners == 0:
            self.local_learner = learner_cls(*args)
            return
        remote_cls = ray.remote(learner_cls).options(**learner_options(config))
        self.remote_learners = [remote_cls.remote(*args) for _ in range(config.num_learners)]
        try:  # a learner that fails to start: end them all (no Algorithm holds this group yet)
            self._join(config)
        except BaseException:
            self.stop()
            raise

    def _join(self, config: "AlgorithmConfig") -> None:
        """Form the learners' torch.distributed group."""
        host, port = ray.get(self.remote_learners[0].open_store_socket.remote(),
                             timeout=STARTUP_TIMEOUT_S)
        threads = max(1, int(config.num_cpus_per_learner))
        # All on this machine (a local Ray): the rendezvous is a file in a directory only this
        # user can open (mkdtemp's mode 0700); across a cluster's nodes, rank 0's TCP store.
        store_path = None
        if host.startswith("127."):
            self._store_dir = tempfile.mkdtemp(prefix="rlcourse-learners-")
            store_path = os.path.join(self._store_dir, "store")
        ray.get([learner.setup_distributed.remote(rank, config.num_learners, host, port, threads,
                                                  store_path)
                 for rank, learner in enumerate(self.remote_learners)], timeout=STARTUP_TIMEOUT_S)

    @property
    def is_local(self) -> bool:
        return self.local_learner is not None

    def update(self, episodes: list[SingleAgentEpisode]) -> dict[str, dict[str, float]]:
        """One update on all episodes: {module_id: loss statistics averaged over the learners}, and
        the env steps trained under "__all_modules__" (RLlib's keys)."""
        if self.module_spec is not None:
            return self._update_multi_agent(episodes)
        num_minibatches = self.config.get_num_minibatches_per_epoch()
        if self.is_local:
            results = self.local_learner.update(episodes, num_minibatches)
        else:
            shards = shard_episodes(episodes, len(self.remote_learners))
            self._check_shards(shards, num_minibatches)
            results = _merge(self._get([
                learner.update.remote(shard, num_minibatches)
                for learner, shard in zip(self.remote_learners, shards, strict=True)]))
        return {DEFAULT_MODULE_ID: results,
                ALL_MODULES: {"num_env_steps_trained": results["num_env_steps_trained"]}}

    def _update_multi_agent(self, episodes: list[MultiAgentEpisode]) -> dict[str, dict]:
        """Each trainable module on its agents' steps (episodes_by_module), split over learners."""
        by_module = episodes_by_module(self.config, episodes)
        n = max(1, len(self.remote_learners))
        minibatches = {mid: num_minibatches(self.config, sum(map(len, module_episodes)), n)
                       for mid, module_episodes in by_module.items()}
        if self.is_local:
            per_module = self.local_learner.update(by_module, minibatches)
        else:
            shards = {mid: shard_episodes(module_episodes, n)
                      for mid, module_episodes in by_module.items()}
            for mid, module_shards in shards.items():
                self._check_shards(module_shards, minibatches[mid], mid)
            results = self._get([
                learner.update.remote({mid: shards[mid][i] for mid in by_module}, minibatches)
                for i, learner in enumerate(self.remote_learners)])
            per_module = {mid: _merge([r[mid] for r in results]) for mid in by_module}
        for stats in per_module.values():
            stats["num_module_steps_trained"] = stats.pop("num_env_steps_trained")
        per_module[ALL_MODULES] = {
            "num_env_steps_trained": sum(len(e) for e in episodes) if per_module else 0,
            "num_module_steps_trained": sum(s["num_module_steps_trained"]
                                            for s in per_module.values())}
        return per_module

    def update_from_batch(self, batch: dict[str, np.ndarray] | list, **kwargs) -> dict:
        """One update on a batch of rows (a replay buffer's), an equal share for every learner; or,
        given one iterator per Learner actor (offline data's splits), on the next batch each reads."""
        if self.is_local:
            return self.local_learner.update_from_batch(batch, **kwargs)
        if isinstance(batch, list):  # each iterator goes to its learner once, which keeps it
            sent, self._iterators = batch is self._iterators, batch
            return _merge(self._get([learner.update_from_iterator.remote(
                None if sent else iterator, **kwargs)
                for learner, iterator in zip(self.remote_learners, batch, strict=True)]))
        shards = [{k: v[rows] for k, v in batch.items()} for rows in
                  np.array_split(np.arange(len(batch["actions"])), len(self.remote_learners))]
        return _merge(self._get([learner.update_from_batch.remote(shard, **kwargs)
                                 for learner, shard in zip(self.remote_learners, shards, strict=True)]))

    def _check_shards(self, shards: list[list[SingleAgentEpisode]], num_minibatches: int,
                      module_id: str | None = None) -> None:
        """Each learner needs a step (an LSTM's: a sequence) per minibatch, as an empty minibatch
        fails; learners get whole episode chunks, so this is checked on the batch, before updates."""
        lstm = lstm_settings(self.config.model_config)
        span, unit = (lstm["max_seq_len"], "sequences") if lstm["use_lstm"] else (1, "steps")
        sizes = [sum(-(-len(e) // span) for e in shard) for shard in shards]
        if min(sizes) >= num_minibatches:
            return
        raise ConfigError(
            "train_batch_size_per_learner", self.config.train_batch_size_per_learner,
            f"a batch of {sum(len(e) for shard in shards for e in shard)} steps in "
            f"{sum(map(len, shards))} episode chunks{f' of module {module_id!r}' if module_id else ''}"
            f" gave the num_learners={len(shards)} learners {sizes} {unit}, and each needs at least "
            f"{num_minibatches} (one per minibatch of minibatch_size={self.config.minibatch_size}). "
            "Raise train_batch_size_per_learner or minibatch_size, use fewer learners, or more "
            "sub-envs (num_envs_per_env_runner: more, shorter chunks).", "training")

    def foreach_learner(self, method: str, *args, **kwargs) -> list:
        """Call a Learner method on every learner and return the results."""
        if self.is_local:
            return [getattr(self.local_learner, method)(*args, **kwargs)]
        return self._get([getattr(learner, method).remote(*args, **kwargs)
                          for learner in self.remote_learners])

    def _foreach_with_rng(self, method: str, state: dict, name: Callable | None = None) -> None:
        """`method` on every learner with `state` and one saved RNG: its own if the learner count
        is the same, else the first (and, given `name`, the fields' names for its errors)."""
        state, rngs = dict(state), state["rngs"]
        del state["rngs"]
        count = max(1, self.config.num_learners)
        args = []
        for i in range(count):
            saved = i if len(rngs) == count else 0  # another learner count: all take the first
            names = [partial(_rng_name, name, saved)] if name else []
            args.append(({**state, "rng": rngs[saved]}, *names))
        if self.is_local:
            getattr(self.local_learner, method)(*args[0])
        else:
            self._get([getattr(learner, method).remote(*learner_args)
                       for learner, learner_args in zip(self.remote_learners, args, strict=True)])

    def get_weights(self, inference_only: bool = False) -> dict[str, np.ndarray]:
        """The weights of learner 0 (all learners hold the same ones)."""
        if self.is_local:
            return self.local_learner.get_weights(inference_only)
        return self._get([self.remote_learners[0].get_weights.remote(inference_only)])[0]

    @staticmethod
    def _get(refs: list) -> list:
        """ray.get, with a clear error when a Learner actor has died, and a Learner's
        CheckpointError as it is."""
        try:
            return ray.get(refs)
        except (RayActorError, RayTaskError) as e:
            if isinstance(e, RayTaskError) and isinstance(e.cause, CheckpointError):
                raise CheckpointError(str(e.cause)) from None
            # A survivor's all-reduce fails ("connection closed by peer") as soon as a peer dies,
            # often before the dead actor's own error arrives: look at every answer first.
            if not isinstance(e, RayActorError) and not _a_learner_died(refs):
                raise
            raise LearnerFailure(
                "A Learner actor died. Learners are not restarted: the data-parallel group shares "
                "one optimizer state, which died with it. Build the algorithm again, or continue "
                "from a checkpoint with Algorithm.from_checkpoint(path).") from e

    def set_weights(self, weights: dict[str, np.ndarray]) -> None:
        self.foreach_learner("set_weights", weights)

    def get_state(self) -> dict:
        """Learner 0's state (all hold the same weights), with every learner's own RNG in `rngs`."""
        states = self.foreach_learner("get_state")
        return {**states[0], "rngs": [state.pop("rng") for state in states]}

    def check_state(self, state: dict, name: Callable[[str], str]) -> None:
        """Refuse a saved `get_state()` before any learner takes it: each learner checks it with
        the RNG set_state would give it (Learner.check_state); `name(key)` names field and file."""
        if not isinstance(state["rngs"], list) or not state["rngs"]:
            raise CheckpointError(f"{name('rngs')} must be a list of each learner's random state.")
        self._foreach_with_rng("check_state", state, name)

    def set_state(self, state: dict) -> None:
        """Give every learner the saved state, with its own RNG if the learner count is the same."""
        self._foreach_with_rng("set_state", state)

    def stop(self, kill_actors: bool = True) -> None:
        """End the Learner actors (`kill_actors=False`: they ended with their Ray)."""
        for learner in self.remote_learners if kill_actors else []:
            ray.kill(learner)
        self.remote_learners = []
        if self._store_dir is not None:
            shutil.rmtree(self._store_dir, ignore_errors=True)


def _a_learner_died(refs: list, timeout_s: float = 30.0) -> bool:
    """Whether any of the learners' answers is a dead actor's (waiting up to `timeout_s` for them)."""
    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=timeout_s)
    for ref in ready:
        try:
            ray.get(ref)
        except RayActorError:
            return True
        except RayTaskError:
            pass
    return False
