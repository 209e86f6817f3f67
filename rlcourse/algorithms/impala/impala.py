"""IMPALA (Espeholt et al. 2018): runners act and the learner learns at the same time, where PPO
takes turns. Runners act with slightly old weights (the *policy lag*); V-trace corrects for it."""

import queue
from typing import Any

import numpy as np

from rlcourse.algorithms import off_policy
from rlcourse.algorithms.algorithm import Algorithm
from rlcourse.algorithms.algorithm_config import AlgorithmConfig
from rlcourse.algorithms.config_setters import NotProvided, setter
from rlcourse.algorithms.config_validation import (
    check_bool,
    check_episode_chunks,
    check_int,
    check_number,
)
from rlcourse.algorithms.impala.circular_buffer import CircularBuffer
from rlcourse.algorithms.impala.learner_thread import LearnerThread
from rlcourse.algorithms.trained_module import trained_module
from rlcourse.core import DEFAULT_MODULE_ID
from rlcourse.utils.validation import fail


class IMPALAConfig(AlgorithmConfig):
    """IMPALA's settings, with RLlib 2.60's names and defaults (the lessons set those of RLlib's
    tuned_examples/impala/cartpole_impala.py)."""

    @property
    def algo_class(self) -> type["IMPALA"]:
        return IMPALA

    def get_default_learner_class(self) -> type:
        from rlcourse.algorithms.impala.impala_learner import IMPALALearner  # torch
        return IMPALALearner

    def __init__(self) -> None:
        super().__init__()
        self.num_env_runners = 2
        self.lr = 5e-4
        self.train_batch_size_per_learner = 500
        self.minibatch_size = None  # V-trace runs backwards through whole fragments
        self.num_epochs = 1
        self.rollout_fragment_length = 50
        self.grad_clip = 40.0
        self.vtrace = True
        self.vtrace_clip_rho_threshold = 1.0
        self.vtrace_clip_pg_rho_threshold = 1.0
        self.vf_loss_coeff = 0.5
        self.entropy_coeff = 0.01  # keeps exploring; a policy with entropy 0 cannot recover
        self.broadcast_interval = 1
        self.learner_queue_size = 3

    @setter
    def training(self, *, vtrace: bool = NotProvided, vtrace_clip_rho_threshold: float = NotProvided,
                 vtrace_clip_pg_rho_threshold: float = NotProvided,
                 vf_loss_coeff: float = NotProvided, entropy_coeff: float = NotProvided,
                 broadcast_interval: int = NotProvided, learner_queue_size: int = NotProvided,
                 **kwargs: Any) -> "IMPALAConfig":
        """IMPALA's own settings plus the shared ones (gamma, lr, grad_clip, ...)."""
        super().training(**kwargs)

    def validate(self) -> None:
        super().validate()
        check_bool(self, "vtrace", "True (V-trace targets) or False (treat data as on-policy)")
        check_number(self, "vtrace_clip_rho_threshold", 0.0, low_open=True)
        check_number(self, "vtrace_clip_pg_rho_threshold", 0.0, low_open=True)
        check_number(self, "vf_loss_coeff", 0.0)
        check_number(self, "entropy_coeff", 0.0)
        check_int(self, "broadcast_interval", 1)
        check_int(self, "learner_queue_size", 1)
        check_episode_chunks(self, fragment=self.get_rollout_fragment_length())
        if self.minibatch_size is not None and self.minibatch_size != self.train_batch_size_per_learner:
            fail(self, "minibatch_size", "IMPALA cannot split a batch: V-trace runs backwards through "
                 "whole fragments. Leave minibatch_size=None (one step per train batch).")


class IMPALA(Algorithm):
    """Keeps sample requests in flight on every runner and hands train batches to a learner thread
    through a queue; one `train()` samples at least a train batch and waits for an update."""

    supports_lstm = True  # impala_learner.py runs the module over sequences
    learner_thread: LearnerThread | None = None  # started by setup()

    @classmethod
    def get_default_config(cls) -> IMPALAConfig:
        return IMPALAConfig()

    def setup(self, config: IMPALAConfig) -> None:
        super().setup(config)
        self.learner_thread = LearnerThread(self.learner_group, self.learner_queue(),
                                            config.broadcast_interval)
        self.learner_thread.start()
        self._batch: list = []  # episodes for the next train batch, and their oldest weights
        self._batch_version = np.inf

    def learner_queue(self) -> queue.Queue | CircularBuffer:
        """Where train batches wait for the learner thread (APPO's is a CircularBuffer)."""
        return queue.Queue(maxsize=self.config.learner_queue_size)

    def training_step(self) -> dict[str, Any]:
        cfg = self.config
        runner_metrics: list[dict] = []
        learner_results: list[dict] = []
        sampled = 0
        with self.timers.time("sample_and_learn"):
            while sampled < cfg.total_train_batch_size or not learner_results:
                published = self.learner_thread.weights  # the learner thread's newest weights
                if published is not None and published[1] > self.env_runner_group.weights_seq_no:
                    self.sync_env_runner_weights(weights=published[0], weights_seq_no=published[1])
                if self.env_runner_group.local_env_runner is not None:
                    # Sampling here shares Python's lock with the learner thread: keep one batch ahead.
                    self.learner_thread.wait_until_taken(timeout_s=1.0)
                for sample in self.env_runner_group.fetch_ready_async_samples(
                        cfg.max_requests_in_flight_per_env_runner):
                    runner_metrics.append(sample.metrics)
                    sampled += sample.metrics["num_env_steps_sampled"]
                    self._add_to_batch(sample.episodes, sample.weights_seq_no)
                learner_results += self.learner_thread.get_results()
        learner = off_policy.mean_learner_results(learner_results)
        learner["num_updates_lifetime"] = self.learner_thread.num_updates
        self.num_env_steps_trained_lifetime += learner["num_env_steps_trained"]
        return {"env_runners": self.episode_stats.add(runner_metrics),
                "learners": {DEFAULT_MODULE_ID: learner},
                "learner_queue": {"size": self.learner_thread.inqueue.qsize(),
                                  "num_drops_lifetime": self.learner_thread.num_queue_drops}}

    def _add_to_batch(self, episodes: list, weights_version: int) -> None:
        """Collect episodes until a train batch is full, then queue it for the learner thread."""
        self._batch.extend(episodes)
        self._batch_version = min(self._batch_version, weights_version)
        if sum(len(e) for e in self._batch) >= self.config.total_train_batch_size:
            self.learner_thread.add(self._batch, int(self._batch_version))
            self._batch, self._batch_version = [], np.inf

    # The learner thread holds its lock during each update: whatever reads or replaces the learner's
    # module and optimizer takes the lock too, so it sees them between two updates, never inside one.

    def _runner_weights(self) -> dict[str, np.ndarray]:
        with self.learner_thread.lock:
            return super()._runner_weights()

    def get_module(self, module_id: str | None = None) -> Any:
        """A copy of the module as of one update (the learner thread keeps changing its own)."""
        self._check_usable()
        with self.learner_thread.lock:
            return trained_module(self, module_id, copy=True)

    def get_state(self) -> tuple[dict[str, Any], dict[str, Any]]:
        with self.learner_thread.lock:
            return super().get_state()

    def set_state(self, state: dict[str, Any], tensors: dict[str, Any]) -> None:
        """Restore; the learner's next updates count on from the restored weights' version."""
        with self.learner_thread.lock:
            super().set_state(state, tensors)
            self.learner_thread.restart_from_version(self.env_runner_group.weights_seq_no)
        self._batch, self._batch_version = [], np.inf

    def stop(self) -> None:
        if self.learner_thread is not None:
            self.learner_thread.stop()
        super().stop()
