"""CircularBuffer: a learner queue whose batches are learned from more than once (APPO's, as RLlib
names it; Luo et al. 2020, "IMPACT"), where IMPALA's plain queue hands each batch out once."""

import queue
import threading
from collections import deque
from typing import Any

import numpy as np


class CircularBuffer:
    """Holds at most `num_batches` train batches (N); the learner takes them in random order, each
    at most `iterations_per_batch` times (K); a new batch evicts the oldest, used up or not.
    Thread-safe: the driver puts, the learner thread gets."""

    def __init__(self, num_batches: int, iterations_per_batch: int, seed: int | None = None):
        self.num_batches = num_batches
        self.iterations_per_batch = iterations_per_batch
        self._batches: deque[list] = deque()  # [batch, times it may still be taken], oldest first
        self._ready = threading.Condition()
        self._rng = np.random.default_rng(seed)

    def put(self, batch: Any) -> int:
        """Add `batch`; return how many batches were evicted to make room for it (0 or 1)."""
        with self._ready:
            evicted = len(self._batches) == self.num_batches
            if evicted:
                self._batches.popleft()
            self._batches.append([batch, self.iterations_per_batch])
            self._ready.notify()
        return int(evicted)

    def get(self, timeout: float | None = None) -> Any:
        """A batch drawn at random, in proportion to the times each may still be taken (as RLlib
        draws); waits up to `timeout` seconds for one, else raises queue.Empty."""
        with self._ready:
            if not self._ready.wait_for(lambda: self._batches, timeout):
                raise queue.Empty
            uses = np.array([entry[1] for entry in self._batches], dtype=float)
            index = int(self._rng.choice(len(uses), p=uses / uses.sum()))
            entry = self._batches[index]
            entry[1] -= 1
            if entry[1] == 0:
                del self._batches[index]
            return entry[0]

    def get_nowait(self) -> Any:
        return self.get(timeout=0)

    def qsize(self) -> int:
        """How many more times batches can be taken."""
        with self._ready:
            return sum(entry[1] for entry in self._batches)

    def empty(self) -> bool:
        return self.qsize() == 0
