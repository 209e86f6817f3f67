"""Replay buffers of episodes (RLlib's new stack): uniform, and prioritized with a sum-tree."""

from rlcourse.utils.replay_buffers.episode_replay_buffer import EpisodeReplayBuffer
from rlcourse.utils.replay_buffers.prioritized_episode_replay_buffer import (
    PrioritizedEpisodeReplayBuffer,
)

__all__ = ["EpisodeReplayBuffer", "PrioritizedEpisodeReplayBuffer"]
