"""PrioritizedEpisodeReplayBuffer: replay steps in proportion to their TD error (Schaul et al. 2016).

Step i is drawn with probability P(i) = p_i^alpha / sum_k p_k^alpha, where p_i is its last absolute
TD error (new steps get the largest priority seen so far, so each is replayed at least about once).
Drawing by priority biases the updates; the importance weights w_i = (N * P(i))^-beta undo part of
that (all of it at beta = 1), divided by the largest weight any stored step could get, so that
weights only scale updates down. The priorities live in a sum-tree (`sum_tree.py`), one leaf a slot.
"""

from typing import Any

import numpy as np

from rlcourse.utils.replay_buffers.episode_replay_buffer import EpisodeReplayBuffer
from rlcourse.utils.replay_buffers.sum_tree import SumTree
from rlcourse.utils.serialization import from_plain, to_plain

PRIORITY_EPSILON = 1e-6  # a step with TD error 0 keeps a small chance of being replayed


class PrioritizedEpisodeReplayBuffer(EpisodeReplayBuffer):
    """`alpha`: how much priorities count (0: uniform); `beta`: how much weights correct for it."""

    def __init__(self, capacity: int = 50_000, alpha: float = 0.6, beta: float = 0.4,
                 seed: int | None = None):
        self.alpha = alpha
        self.beta = beta
        self.tree = SumTree(capacity)
        self.max_priority = 1.0  # the largest p_i seen (before ** alpha)
        super().__init__(capacity, seed)

    def _on_slots_added(self, slots: np.ndarray) -> None:
        self.tree.set(slots, np.full(len(slots), self.max_priority ** self.alpha))

    def _on_slots_freed(self, slots: np.ndarray) -> None:
        self.tree.set(slots, np.zeros(len(slots)))

    def sample(self, num_items: int, n_step: int = 1, gamma: float = 0.99,
               beta: float | None = None) -> dict[str, np.ndarray]:
        """As `EpisodeReplayBuffer.sample`, drawn by priority, with importance `weights`."""
        if len(self) == 0:
            raise ValueError("The replay buffer is empty: add episodes before sampling.")
        beta = self.beta if beta is None else beta
        slots = self.tree.sample(num_items, self.rng)
        leaves = self.tree.leaves[:self.capacity]
        probabilities = leaves[slots] / self.tree.total
        smallest = leaves[self._slot_t >= 0].min() / self.tree.total
        weights = (probabilities / smallest) ** -beta  # = (N P(i))^-beta / (N P_min)^-beta
        return {**self._n_step_transitions(slots, n_step, gamma),
                "weights": weights.astype(np.float32), "indices": slots}

    def update_priorities(self, indices: np.ndarray, td_errors: np.ndarray) -> None:
        """Give the sampled steps (`indices` from `sample`) the priority |TD error| + epsilon."""
        priorities = np.abs(np.asarray(td_errors, dtype=np.float64)) + PRIORITY_EPSILON
        # A slot drawn twice in one batch keeps its last TD error, as in RLlib.
        self.tree.set(indices, priorities ** self.alpha)
        self.max_priority = max(self.max_priority, float(priorities.max()))

    def get_state(self) -> dict[str, Any]:
        return {**super().get_state(), "priorities": to_plain(self.tree.leaves[:self.capacity]),
                "max_priority": self.max_priority}

    def set_state(self, state: dict[str, Any]) -> None:
        super().set_state(state)
        self.tree = SumTree(self.capacity)
        self.tree.set(np.arange(self.capacity), from_plain(state["priorities"]))
        self.max_priority = state["max_priority"]
