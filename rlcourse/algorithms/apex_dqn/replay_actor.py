"""ReplayActor: one shard of Ape-X's replay memory, a replay buffer in a Ray actor (NumPy only).

A priority update arrives after its batch was drawn, when a slot may hold another step: each slot
counts how often it was filled (its generation), and an update changes only slots still holding it.
"""

import os
from typing import Any

import numpy as np

from rlcourse.env.sample_result import SampleResult
from rlcourse.utils.replay_buffers import EpisodeReplayBuffer, PrioritizedEpisodeReplayBuffer


class _Generations:
    """Mixin for a replay buffer: how often each slot was filled, to spot stale priority updates."""

    capacity: int
    generations: np.ndarray  # set by _clear
    _slot_t: np.ndarray  # EpisodeReplayBuffer's: each slot's step in its episode (-1: free)

    def _clear(self) -> None:
        super()._clear()
        self.generations = np.zeros(self.capacity, dtype=np.int64)

    def _on_slots_added(self, slots: np.ndarray) -> None:
        super()._on_slots_added(slots)
        self.generations[slots] += 1

    def still_holds(self, slots: np.ndarray, generations: np.ndarray) -> np.ndarray:
        """Which `slots` still hold the step they held at `generations` (not evicted, not refilled)."""
        return (self.generations[slots] == generations) & (self._slot_t[slots] >= 0)


class ShardBuffer(_Generations, EpisodeReplayBuffer):
    """Uniform replay, with slot generations."""


class PrioritizedShardBuffer(_Generations, PrioritizedEpisodeReplayBuffer):
    """Prioritized replay, with slot generations."""


class ReplayActor:
    """One replay shard, created by ApexDQN as a Ray actor."""

    def __init__(self, replay_buffer_config: dict, seed: int | None = None):
        rb = replay_buffer_config
        if rb["type"] == "PrioritizedEpisodeReplayBuffer":
            self.buffer: ShardBuffer | PrioritizedShardBuffer = PrioritizedShardBuffer(
                rb["capacity"], rb["alpha"], rb["beta"], seed=seed)
        else:
            self.buffer = ShardBuffer(rb["capacity"], seed=seed)
        self.num_priority_updates = 0  # rows whose priority was set
        self.num_stale_priorities_dropped = 0  # rows whose slot had changed meanwhile

    def ping(self) -> int:
        return os.getpid()

    def add_sample(self, sample: SampleResult) -> dict[str, Any]:
        """Store a runner's sample; return the runner's metrics, process id and connector
        statistics, and this shard's size: what the driver needs."""
        self.buffer.add(sample.episodes)
        return {"metrics": sample.metrics, "pid": sample.pid,
                "env_to_module_buffers": sample.env_to_module_buffers,
                "num_env_steps_stored": len(self.buffer)}

    def sample(self, num_items: int, n_step: int, gamma: float) -> dict[str, np.ndarray]:
        """A replay batch (EpisodeReplayBuffer.sample) plus the `generations` of its rows."""
        batch = self.buffer.sample(num_items, n_step=n_step, gamma=gamma)
        batch["generations"] = self.buffer.generations[batch["indices"]]
        return batch

    def update_priorities(self, indices: np.ndarray, generations: np.ndarray,
                          td_errors: np.ndarray) -> None:
        """New priorities from the learner, for the rows whose slots still hold what was drawn."""
        keep = self.buffer.still_holds(indices, generations)
        if keep.any():
            self.buffer.update_priorities(indices[keep], np.asarray(td_errors)[keep])
        self.num_priority_updates += int(keep.sum())
        self.num_stale_priorities_dropped += int((~keep).sum())

    def get_stats(self) -> dict[str, int]:
        return {"num_env_steps_stored": len(self.buffer),
                "num_episodes_stored": self.buffer.get_num_episodes(),
                "num_env_steps_added_lifetime": self.buffer.num_steps_added_lifetime,
                "num_priority_updates": self.num_priority_updates,
                "num_stale_priorities_dropped": self.num_stale_priorities_dropped}

    def get_state(self) -> dict[str, Any]:
        return self.buffer.get_state()

    def set_state(self, state: dict[str, Any]) -> None:
        self.buffer.set_state(state)
