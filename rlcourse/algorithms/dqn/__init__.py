"""DQN: `dqn.py` (settings and the training step), `dqn_learner.py` (the loss and target updates),
`dqn_rl_module.py` (the Q-network) and `numpy_q_module.py` (its epsilon-greedy form on runners)."""

from rlcourse.algorithms.dqn.dqn import DQN, DQNConfig

__all__ = ["DQN", "DQNConfig"]
