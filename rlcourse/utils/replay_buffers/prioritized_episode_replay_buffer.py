from typing import Any

import numpy as np

from rlcourse.utils.replay_buffers.episode_replay_buffer import EpisodeReplayBuffer
from rlcourse.utils.serialization import from_plain, to_plain

PRIORITY_EPSILON = 1e-6  # a step with TD error 0 keeps a small chance of being replayed


class SumTree:
    """A binary tree whose every node holds the sum of its children; leaf i holds slot i's priority.

    To draw, take u uniform in [0, total) and walk down: left if u is below the left child's sum,
    else subtract that sum and go right. Leaf i is reached with probability priority_i / total."""

    def __init__(self, capacity: int):
        self.size = 1 << max(1, int(capacity - 1).bit_length())  # leaves: a power of two, >= 2
        self.tree = np.zeros(2 * self.size)  # node 1 is the root; leaves are size..2*size-1

    @property
    def total(self) -> float:
        return float(self.tree[1])

    @property
    def leaves(self) -> np.ndarray:
        return self.tree[self.size:]

    def set(self, slots: np.ndarray, priorities: np.ndarray) -> None:
        """Set the slots' priorities and recompute their ancestors' sums (recomputed, not adjusted,
        so rounding errors never pile up)."""
        nodes = np.asarray(slots, dtype=np.int64) + self.size
        self.tree[nodes] = priorities
        while nodes[0] > 1:  # all leaves are equally deep: one level per pass, up to the root
            nodes //= 2  # a node listed twice is just computed twice, to the same sum
            self.tree[nodes] = self.tree[2 * nodes] + self.tree[2 * nodes + 1]

    def find(self, prefix_sums: np.ndarray) -> np.ndarray:
        """For each u in [0, total), the slot whose cumulative priority range holds u."""
        u = np.array(prefix_sums, dtype=np.float64)
        nodes = np.ones(len(u), dtype=np.int64)
        while nodes[0] < self.size:
            left = self.tree[2 * nodes]
            # Never step into a subtree of zero sum, which rounding could otherwise reach.
            go_right = (u >= left) & (self.tree[2 * nodes + 1] > 0)
            u -= left * go_right
            nodes = 2 * nodes + go_right
        return nodes - self.size

    def sample(self, num: int, rng: np.random.Generator) -> np.ndarray:
        """`num` slots drawn with replacement, each with probability priority / total."""
        return self.find(rng.random(num) * self.total)


class PrioritizedEpisodeReplayBuffer(EpisodeReplayBuffer):
    """Prioritized replay (Schaul et al. 2016): step i is drawn with probability P(i) = p_i^alpha /
    sum_k p_k^alpha from a SumTree, p_i its last |TD error| (new steps: the largest seen so far).

    Importance weights (N P(i))^-beta, divided by the largest, undo part of the bias (all of it at
    beta = 1) and only scale updates down. `alpha` 0 is uniform replay."""

    PRIORITIZED = True

    def __init__(self, capacity: int = 50_000, alpha: float = 0.6, beta: float = 0.4,
                 seed: int | None = None):
        if not (alpha >= 0 and beta >= 0):  # also refuses NaN
            raise ValueError(f"PrioritizedEpisodeReplayBuffer(alpha={alpha}, beta={beta}): both "
                             "are exponents >= 0 (alpha 0: uniform replay; beta 0: no importance "
                             "weights).")
        self.alpha, self.beta = alpha, beta
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
        self._check_sample(num_items, n_step)
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
        indices = np.asarray(indices)
        priorities = np.abs(np.asarray(td_errors, dtype=np.float64)) + PRIORITY_EPSILON
        if indices.shape != priorities.shape or indices.ndim != 1:
            raise ValueError(f"update_priorities: {indices.shape} indices for {priorities.shape} "
                             "TD errors; give one TD error per sampled index, both 1-D.")
        if len(indices) == 0:  # nothing to update (an empty batch)
            return
        if not np.isfinite(priorities).all():
            raise ValueError("update_priorities: a TD error is NaN or infinite; it would make "
                             "every later draw pick slot 0. Find where the loss diverges.")
        stored = (indices >= 0) & (indices < self.capacity)
        stored[stored] = self._slot_t[indices[stored]] >= 0
        if not stored.all():
            raise ValueError(f"update_priorities: index {indices[~stored][0]} is not a stored "
                             "step; pass the `indices` that sample() returned.")
        # A slot drawn twice in one batch keeps its last TD error, as in RLlib.
        self.tree.set(indices, priorities ** self.alpha)
        self.max_priority = max(self.max_priority, float(priorities.max()))

    def get_state(self) -> dict[str, Any]:
        return {**super().get_state(), "priorities": to_plain(self.tree.leaves[:self.capacity]),
                "max_priority": self.max_priority}

    def set_state(self, state: dict[str, Any]) -> None:
        super().set_state(state)  # checks `state` (priorities too) before it changes anything
        self.tree = SumTree(self.capacity)
        self.tree.set(np.arange(self.capacity), from_plain(state["priorities"]))
        self.max_priority = state["max_priority"]
