"""Ape-X DQN: `apex_dqn.py` (settings, per-runner epsilons and the asynchronous training step) and
`replay_actor.py` (a replay shard as a Ray actor). The loss and the Q-networks are DQN's."""

from rlcourse.algorithms.apex_dqn.apex_dqn import ApexDQN, ApexDQNConfig

__all__ = ["ApexDQN", "ApexDQNConfig"]
