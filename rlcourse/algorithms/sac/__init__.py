"""SAC: `sac.py` (settings; the training step is DQN's), `sac_learner.py` (the three losses),
`sac_rl_module.py` (policy, twin critics, temperature) and `numpy_sac_module.py` (the policy on
runners)."""

from rlcourse.algorithms.sac.sac import SAC, SACConfig

__all__ = ["SAC", "SACConfig"]
