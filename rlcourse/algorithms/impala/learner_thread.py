"""LearnerThread: IMPALA's learning in the background while the driver collects samples. It shares
the GIL with the driver's loop, which gets turns while torch's kernels release it."""

import contextlib
import queue
import threading
import time

import numpy as np

from rlcourse.algorithms.impala.circular_buffer import CircularBuffer
from rlcourse.core import DEFAULT_MODULE_ID
from rlcourse.env.single_agent_episode import SingleAgentEpisode


class LearnerThread(threading.Thread):
    """Takes train batches from `inqueue`, a bounded queue (IMPALA's: when full, the oldest, sampled
    by the stalest policy, is dropped) or a CircularBuffer (APPO's), and publishes new weights
    every `broadcast_interval` updates."""

    def __init__(self, learner_group, inqueue: queue.Queue | CircularBuffer,
                 broadcast_interval: int):
        super().__init__(daemon=True, name="rlcourse-learner")
        self.learner_group = learner_group
        self.broadcast_interval = broadcast_interval
        self.inqueue = inqueue
        self.outqueue: queue.Queue = queue.Queue()
        # Held during an update, so weights are never read mid-step; reentrant for a restore.
        self.lock = threading.RLock()
        self.num_updates = 0
        self.num_queue_drops = 0
        self.weights: tuple[dict[str, np.ndarray], int] | None = None  # (weights, version)
        self.error: BaseException | None = None
        self._stopped = threading.Event()

    def add(self, episodes: list[SingleAgentEpisode], weights_version: int) -> None:
        """Queue a train batch sampled with `weights_version`; if full, drop the oldest batch."""
        if isinstance(self.inqueue, CircularBuffer):  # it evicts its oldest batch itself
            self.num_queue_drops += self.inqueue.put((episodes, weights_version))
            return
        while True:
            try:
                self.inqueue.put_nowait((episodes, weights_version))
                return
            except queue.Full:
                with contextlib.suppress(queue.Empty):
                    self.inqueue.get_nowait()
                    self.num_queue_drops += 1

    def wait_until_taken(self, timeout_s: float) -> None:
        """Wait (at most `timeout_s`) until the learner has taken every queued batch: a runner in
        this process that samples further ahead only makes batches to drop, and slows the learner."""
        deadline = time.monotonic() + timeout_s
        while not self.inqueue.empty() and self.is_alive() and time.monotonic() < deadline:
            time.sleep(0.002)  # sleeping releases the GIL to the learner thread

    def run(self) -> None:
        # A learner in this process computes on one torch thread, as one in an actor of 1 CPU does:
        # more threads compete with the runners and the driver's loop (benchmarks/gpu_learner.py
        # times an update on one thread and on torch's default count).
        threads = contextlib.nullcontext()
        if self.learner_group.is_local:  # torch is loaded: the learner lives in this process
            from rlcourse.core.learner.learner import one_torch_thread
            threads = one_torch_thread()
        try:
            with threads:
                while not self._stopped.is_set():
                    try:
                        episodes, version = self.inqueue.get(timeout=0.1)
                    except queue.Empty:
                        continue
                    self._update(episodes, version)
        except BaseException as e:  # the driver re-raises it; a thread cannot
            self.error = e

    def _update(self, episodes: list[SingleAgentEpisode], version: int) -> None:
        start = time.perf_counter()
        with self.lock:
            results = self.learner_group.update(episodes)[DEFAULT_MODULE_ID]
            self.num_updates += 1
            if self.num_updates % self.broadcast_interval == 0:
                self.weights = (self.learner_group.get_weights(inference_only=True),
                                self.num_updates)
        # Policy lag: how many updates the learner had made since the data's weights were made.
        results["policy_lag"] = self.num_updates - 1 - version
        results["update_time_s"] = time.perf_counter() - start
        self.outqueue.put(results)

    def restart_from_version(self, version: int) -> None:
        """After a restore (with the lock held): count updates on from `version`, and drop queued
        batches and published weights from before it."""
        self.num_updates = version
        self.weights = None
        while not self.inqueue.empty():
            self.inqueue.get_nowait()

    def get_results(self) -> list[dict]:
        """Results of the updates finished since the last call; re-raises a learner error."""
        if self.error is not None:
            raise RuntimeError("The learner thread failed; see the error above.") from self.error
        return [self.outqueue.get_nowait() for _ in range(self.outqueue.qsize())]  # one reader

    def stop(self) -> None:
        self._stopped.set()
        if self.is_alive():
            self.join(timeout=60)
