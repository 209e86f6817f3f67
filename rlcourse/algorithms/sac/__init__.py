"""SAC: `sac.py` (settings and DQN's loop), `sac_learner.py` (the three losses) and
`sac_rl_module.py` (policy, twin critics, temperature)."""

from rlcourse.algorithms.sac.sac import SAC, SACConfig

__all__ = ["SAC", "SACConfig"]
