"""SumTree: a binary tree whose every node holds the sum of its children's priorities.

Leaf i holds slot i's priority. Drawing u uniformly in [0, total) and walking down (left if u is
below the left child's sum, else subtract it and go right) picks leaf i with probability
priority_i / total, in log2(size) steps, for a whole batch of u at once.
"""

import numpy as np


class SumTree:
    """Priorities of `capacity` slots; `sample` draws slots in proportion to them."""

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
        """Set the slots' priorities, then recompute their ancestors from their children (sums are
        recomputed, not adjusted by differences, so rounding errors never pile up)."""
        nodes = np.asarray(slots, dtype=np.int64) + self.size
        self.tree[nodes] = priorities
        while nodes[0] > 1:  # all leaves are equally deep: one level per pass, up to the root
            nodes //= 2  # a node listed twice is just computed twice, with the same result
            self.tree[nodes] = self.tree[2 * nodes] + self.tree[2 * nodes + 1]

    def find(self, prefix_sums: np.ndarray) -> np.ndarray:
        """For each value u in [0, total), the slot whose cumulative priority range holds u."""
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
