"""DQN: `dqn.py` (settings and the loop), `dqn_learner.py` (the loss), `dqn_rl_module.py` (the
Q-network); the replay pieces DQN, SAC and Ape-X share are in ../off_policy.py."""

from rlcourse.algorithms.dqn.dqn import DQN, DQNConfig

__all__ = ["DQN", "DQNConfig"]
