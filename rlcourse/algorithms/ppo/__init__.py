"""PPO: `ppo.py` (settings and the training step) and `ppo_learner.py` (the clipped loss)."""

from rlcourse.algorithms.ppo.ppo import PPO, PPOConfig

__all__ = ["PPO", "PPOConfig"]
