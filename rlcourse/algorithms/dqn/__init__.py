"""DQN: `dqn.py` (settings and the training step), `dqn_learner.py` (the loss and target updates) and
`dqn_rl_module.py` (the Q-network; runners run it in NumPy with an `EpsilonGreedy` head,
core/rl_module/numpy_mlp.py). The replay pieces DQN, SAC and Ape-X share: ../off_policy.py."""

from rlcourse.algorithms.dqn.dqn import DQN, DQNConfig

__all__ = ["DQN", "DQNConfig"]
