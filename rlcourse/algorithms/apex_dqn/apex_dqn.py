"""Ape-X DQN (Horgan et al. 2018): DQN whose runners, replay shards and learner never wait on each
other, as replay allows (benchmarks/apex_throughput.py measures it)."""

from collections import Counter
from typing import Any

import gymnasium as gym
import numpy as np
import ray
from ray.exceptions import GetTimeoutError, RayError

from rlcourse.algorithms import off_policy
from rlcourse.algorithms.algorithm import Algorithm
from rlcourse.algorithms.apex_dqn.replay_actor import ReplayActor
from rlcourse.algorithms.config_setters import NotProvided, setter
from rlcourse.algorithms.config_validation import check_bool, check_int, check_number, is_int
from rlcourse.algorithms.dqn.dqn import DQNConfig
from rlcourse.core import DEFAULT_MODULE_ID
from rlcourse.core.rl_module.numpy_mlp import EpsilonGreedy
from rlcourse.utils.validation import fail

SHARD_STARTUP_TIMEOUT_S = 60


def per_worker_epsilons(num_env_runners: int, epsilon: float = 0.4, alpha: float = 7.0
                        ) -> list[float]:
    """Runner i's (0-based) fixed epsilon, epsilon ** (1 + alpha * i / (N - 1)) (Ape-X, p. 6; RLlib's
    PerWorkerEpsilonGreedy): the first runner explores a lot, the last acts almost greedily."""
    n = num_env_runners
    return [epsilon ** (1 + alpha * i / (n - 1)) if n > 1 else epsilon for i in range(n)]


class ApexDQNConfig(DQNConfig):
    """DQN's settings plus Ape-X's, with RLlib's names. `replay_buffer_config` takes
    `num_replay_buffer_shards` (replay actors), and its `capacity` is per shard."""

    extra_replay_buffer_keys = ("num_replay_buffer_shards",)

    @property
    def algo_class(self) -> type["ApexDQN"]:
        return ApexDQN

    def __init__(self) -> None:
        super().__init__()
        self.num_env_runners = 2
        self.rollout_fragment_length = 50  # RLlib's
        self.max_requests_in_flight_per_env_runner = 2
        self.replay_buffer_config = {**self.replay_buffer_config, "num_replay_buffer_shards": 1}
        self.max_requests_in_flight_per_replay_worker = 2
        self.replay_batches_per_request = 4  # not in RLlib: see training()
        self.max_weight_sync_delay = 400  # env steps sampled between two weight broadcasts
        self.min_sample_timesteps_per_iteration = 1000  # RLlib: 25,000; short suits plots
        self.num_cpus_per_replay_shard = 0.0  # shards only hold data: N runners fit on N cores
        # The replay ratio caps the learner; throttle_sampling_to_training_intensity (not in RLlib)
        # also pauses runners while the learner is a round of replay batches behind.
        self.training_intensity = 8.0
        self.throttle_sampling_to_training_intensity = False

    @setter
    def training(self, *, max_requests_in_flight_per_replay_worker: int = NotProvided,
                 replay_batches_per_request: int = NotProvided, max_weight_sync_delay: int = NotProvided,
                 min_sample_timesteps_per_iteration: int = NotProvided,
                 num_cpus_per_replay_shard: float = NotProvided,
                 throttle_sampling_to_training_intensity: bool = NotProvided,
                 **kwargs: Any) -> "ApexDQNConfig":
        """Ape-X's own settings plus DQN's. A replay request draws `replay_batches_per_request`
        batches (an update each) and returns their priorities in one call: on a busy machine, each
        Ray call costs a shard more than the draw (benchmarks/apex_throughput.py)."""
        super().training(**kwargs)

    def get_action_head(self, action_space: gym.spaces.Discrete, worker_index: int = 0
                        ) -> EpsilonGreedy:
        """Epsilon-greedy with runner `worker_index`'s fixed epsilon (a runner in the driver, index
        0, takes runner 1's)."""
        epsilons = per_worker_epsilons(self.num_env_runners)
        return EpsilonGreedy(int(action_space.n), epsilons[max(worker_index - 1, 0) % len(epsilons)])

    def validate(self) -> None:
        if not (isinstance(self.num_env_runners, int) and self.num_env_runners >= 1):
            fail(self, "num_env_runners", "Ape-X samples on runner actors while this process "
                 "learns: use .env_runners(num_env_runners=2) (at least 1), or DQNConfig for "
                 "sampling and learning in one process.")
        super().validate()
        shards = self.replay_buffer_config.get("num_replay_buffer_shards")
        if not is_int(shards) or shards < 1:
            fail(self, "replay_buffer_config", f"'num_replay_buffer_shards' is {shards!r}: use a "
                 "whole number >= 1 (the replay memory is split over that many actors).")
        for setting in ("max_requests_in_flight_per_env_runner",
                        "max_requests_in_flight_per_replay_worker", "replay_batches_per_request",
                        "max_weight_sync_delay", "min_sample_timesteps_per_iteration"):
            check_int(self, setting, 1)
        check_number(self, "num_cpus_per_replay_shard", 0.0, hint="e.g. 0.1, or 0 (the default).")
        check_bool(self, "throttle_sampling_to_training_intensity", "True or False")
        if self.throttle_sampling_to_training_intensity and self.training_intensity is None:
            fail(self, "throttle_sampling_to_training_intensity", "it needs a replay ratio to keep: "
                 "set training_intensity (e.g. 8.0), or leave this False.")


class ApexDQN(Algorithm):
    """Runners sample all the time, each with its own epsilon, straight into replay shards
    (replay_actor.py); the learner updates on the batches of whichever replay request is ready and
    sends their priorities back in one call, without waiting. A `train()` samples
    `min_sample_timesteps_per_iteration` env steps and, once learning started, learns from a request."""

    @classmethod
    def get_default_config(cls) -> ApexDQNConfig:
        return ApexDQNConfig()

    def setup(self, config: ApexDQNConfig) -> None:
        self.replay_shards: list[ray.actor.ActorHandle] = []  # stop() ends them, even mid-setup
        super().setup(config)  # each runner was built with its own epsilon (get_action_head)
        self.epsilons = per_worker_epsilons(config.num_env_runners)
        self.replay_shards = [
            ray.remote(ReplayActor).options(num_cpus=config.num_cpus_per_replay_shard)
            .remote(config.replay_buffer_config, None if config.seed is None else config.seed + 100 * s)
            for s in range(config.replay_buffer_config["num_replay_buffer_shards"])]
        try:
            ray.get([shard.ping.remote() for shard in self.replay_shards],
                    timeout=SHARD_STARTUP_TIMEOUT_S)
        except GetTimeoutError:
            fail(config, "num_cpus_per_replay_shard", f"the replay shards did not start within "
                 f"{SHARD_STARTUP_TIMEOUT_S} s: the cluster has no room for them. Lower it (0 "
                 "needs no CPU) or ask for fewer runner CPUs.")
        self._shard_sizes = [0] * len(self.replay_shards)
        self._next_shard = -1  # samples go to the shards in turn
        self._adds: dict[ray.ObjectRef, tuple[int, int]] = {}  # add_sample -> (runner, shard)
        self._replay_requests: dict[ray.ObjectRef, int] = {}  # replay batch request -> shard
        self._priority_updates: dict[ray.ObjectRef, int] = {}  # update_priorities -> shard
        self._update_credit = 0.0  # replay batches owed to training_intensity
        self._steps_since_sync = self._sampled_lifetime = 0
        self._rng = np.random.default_rng(config.seed)  # compute_actions(explore=True)

    def compute_actions(self, observations: np.ndarray, explore: bool = False,
                        module_id: str | None = None) -> np.ndarray:
        """Greedy actions; with `explore`, epsilon-greedy ones with runner 1's epsilon."""
        actions = super().compute_actions(observations, explore=False, module_id=module_id)
        if explore:
            actions = off_policy.epsilon_greedy(actions, self.epsilons[0], self.action_space,
                                                self._rng)
        return actions

    def training_step(self) -> dict[str, Any]:
        cfg, group = self.config, self.env_runner_group
        runner_metrics: list[dict] = []
        learner_results: list[dict] = []
        sampled = 0
        peak = {"sample": 0, "replay": 0}
        with self.timers.time("sample_and_learn"):
            while sampled < cfg.min_sample_timesteps_per_iteration or (
                    self._learning_started() and not learner_results):
                # 1. Finished samples go to a replay shard as ObjectRefs: runner -> shard directly.
                for i, ref in group.fetch_ready_async_sample_refs(self._sample_requests_wanted()):
                    s = self._next_shard = (self._next_shard + 1) % len(self.replay_shards)
                    self._adds[self.replay_shards[s].add_sample.remote(ref)] = (i, s)
                # 2. Stored samples: the shard answers with the runner's metrics and connector
                # statistics (merged into the group's, sent with the next weights), or its failure.
                for (i, s), answer in self._collect(self._adds):
                    if isinstance(answer, Exception):
                        group.settle_async_sample(i, answer)
                        continue
                    group.settle_async_sample(i, answer["pid"], answer["env_to_module_buffers"])
                    runner_metrics.append(answer["metrics"])
                    self._shard_sizes[s] = answer["num_env_steps_stored"]
                    sampled += self._stored(answer["metrics"]["num_env_steps_sampled"])
                # 3. Replay batches stay requested on every shard that holds enough steps.
                self._request_replay_batches()
                peak["sample"] = max(peak["sample"], len(group.in_flight_sample_requests))
                peak["replay"] = max(peak["replay"], len(self._replay_requests))
                # 4. Learn on a ready request's batches; their priorities go back, not waited for.
                for shard, batches in self._collect(self._replay_requests, limit=1):
                    if isinstance(batches, Exception):
                        raise RuntimeError(f"Replay shard {shard} failed; its replay memory is "
                                           "lost, so this run cannot go on.") from batches
                    learner_results.extend(self._learn(shard, batches))
                for shard, answer in self._collect(self._priority_updates):
                    if isinstance(answer, Exception):  # as in 4.: the run cannot go on
                        raise RuntimeError(f"Replay shard {shard} died with its memory.") from answer
                # 5. New weights to the runners, every max_weight_sync_delay env steps.
                if learner_results and self._steps_since_sync >= cfg.max_weight_sync_delay:
                    self.sync_env_runner_weights()
                    self._steps_since_sync = 0
                # 6. Wait until any request is done.
                pending = [*group.in_flight_sample_requests, *self._adds, *self._replay_requests]
                if pending:
                    ray.wait(pending, num_returns=1, timeout=1.0, fetch_local=False)
        self._sampled_lifetime = 0  # now counted by episode_stats
        env_runner_results = self.episode_stats.add(runner_metrics)
        env_runner_results.update(epsilons=list(self.epsilons),
                                  num_sample_requests_in_flight_max=peak["sample"])
        learner = off_policy.mean_learner_results(learner_results)
        self.num_env_steps_trained_lifetime += learner["num_env_steps_trained"]
        return {"env_runners": env_runner_results, "learners": {DEFAULT_MODULE_ID: learner},
                "replay_shards": {"num_env_steps_stored": list(self._shard_sizes),
                                  "num_replay_requests_in_flight_max": peak["replay"],
                                  "num_priority_updates_in_flight": len(self._priority_updates)}}

    def _collect(self, requests: dict[ray.ObjectRef, Any], limit: int | None = None
                 ) -> list[tuple[Any, Any]]:
        """(key, answer) of finished `requests`, taken out of it (never waits); a failed request's
        answer is its error."""
        if not requests:
            return []
        ready, _ = ray.wait(list(requests), num_returns=len(requests), timeout=0)
        ready = ready[:limit]
        try:
            answers = ray.get(ready)
        except RayError:  # some failed: fetch them one by one to tell which (all are done)
            answers = [_answer_or_error(ref) for ref in ready]
        return [(requests.pop(ref), answer) for ref, answer in zip(ready, answers, strict=True)]

    def _sample_requests_wanted(self) -> int:
        """Requests to keep in flight per runner: none while a throttled learner lags behind."""
        cfg = self.config
        behind = self._update_credit >= (len(self.replay_shards) * cfg.replay_batches_per_request
                                         * cfg.max_requests_in_flight_per_replay_worker)
        return 0 if cfg.throttle_sampling_to_training_intensity and behind else (
            cfg.max_requests_in_flight_per_env_runner)

    def _stored(self, steps: int) -> int:
        """Count a stored sample's env steps; once learning started, they earn replay batches."""
        self._sampled_lifetime += steps
        self._steps_since_sync += steps
        if self.config.training_intensity is not None and self._learning_started():
            self._update_credit += (self.config.training_intensity * steps
                                    / self.config.total_train_batch_size)
        return steps

    def _learning_started(self) -> bool:
        return off_policy.learning_started(
            self.config, self.episode_stats.num_env_steps_sampled_lifetime + self._sampled_lifetime,
            max(self._shard_sizes))

    def _request_replay_batches(self) -> None:
        cfg = self.config
        if not self._learning_started():
            return
        counts, k = Counter(self._replay_requests.values()), cfg.replay_batches_per_request
        for s, shard in enumerate(self.replay_shards):
            if self._shard_sizes[s] < cfg.total_train_batch_size:
                continue
            while counts[s] < cfg.max_requests_in_flight_per_replay_worker and (
                    cfg.training_intensity is None or self._update_credit >= k):
                self._replay_requests[shard.sample.remote(
                    k * cfg.total_train_batch_size, cfg.n_step, cfg.gamma)] = s
                counts[s] += 1
                if cfg.training_intensity is not None:
                    self._update_credit -= k

    def _learn(self, shard: int, batches: dict[str, np.ndarray]) -> list[dict[str, Any]]:
        """One update per batch of the request's rows; one priority update for all of them."""
        size, results = self.config.total_train_batch_size, []
        sampled = self.episode_stats.num_env_steps_sampled_lifetime + self._sampled_lifetime
        for start in range(0, len(batches["indices"]), size):
            results.append(self.learner_group.update_from_batch(
                {key: rows[start:start + size] for key, rows in batches.items()},
                num_env_steps_sampled_lifetime=sampled))
        td_errors = [result.pop("td_error") for result in results]
        request = self.replay_shards[shard].update_priorities.remote(
            batches["indices"], batches["generations"], np.concatenate(td_errors))
        self._priority_updates[request] = shard
        return results

    def get_state(self) -> tuple[dict[str, Any], dict[str, Any]]:
        state, tensors = super().get_state()
        shards = (ray.get([s.get_state.remote() for s in self.replay_shards])
                  if self.config.store_buffer_in_checkpoints else None)
        state["apex_dqn"] = {"update_credit": self._update_credit,
                             "steps_since_sync": self._steps_since_sync, "replay_shards": shards}
        return state, tensors

    def _check_own_state(self, state: dict[str, Any]) -> None:
        rb, spaces = self.config.replay_buffer_config, self._module_spaces()[DEFAULT_MODULE_ID]
        prioritized = rb["type"] == "PrioritizedEpisodeReplayBuffer"
        off_policy.check_replay_state(state, "apex_dqn", rb["capacity"], prioritized, spaces,
                                      shards=len(self.replay_shards))

    def set_state(self, state: dict[str, Any], tensors: dict[str, Any]) -> None:
        saved = state["apex_dqn"]["replay_shards"]
        super().set_state(state, tensors)
        self._update_credit = state["apex_dqn"]["update_credit"]
        self._steps_since_sync = state["apex_dqn"]["steps_since_sync"]
        self._replay_requests.clear()  # drawn before the restore: never learned from
        if saved is not None:
            ray.get([s.set_state.remote(b) for s, b in zip(self.replay_shards, saved, strict=True)])
            self._shard_sizes = [b["capacity"] - len(b["free"]) for b in saved]

    def stop(self) -> None:
        """Stop runners and learners, then end the replay shards (their memory goes with them)."""
        shards, self.replay_shards = self.replay_shards, []
        if shards and (self._ray_session is None or self._same_ray()):
            for shard in shards:
                ray.kill(shard)
        super().stop()


def _answer_or_error(ref: ray.ObjectRef) -> Any:
    try:
        return ray.get(ref)
    except RayError as e:
        return e
