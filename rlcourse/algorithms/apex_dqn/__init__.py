"""Ape-X DQN: `apex_dqn_config.py` (settings and per-runner epsilons), `apex_dqn.py` (the
asynchronous training step) and `replay_actor.py` (a replay shard as a Ray actor). The loss and the
Q-networks are DQN's."""

from rlcourse.algorithms.apex_dqn.apex_dqn import ApexDQN
from rlcourse.algorithms.apex_dqn.apex_dqn_config import ApexDQNConfig

__all__ = ["ApexDQN", "ApexDQNConfig"]
