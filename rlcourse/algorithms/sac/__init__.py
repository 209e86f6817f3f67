"""SAC: `sac.py` (settings and the training step, DQN's loop), `sac_learner.py` (the three losses)
and `sac_rl_module.py` (policy, twin critics, temperature; runners run the policy in NumPy with a
`SquashedGaussian` head, core/rl_module/numpy_mlp.py)."""

from rlcourse.algorithms.sac.sac import SAC, SACConfig

__all__ = ["SAC", "SACConfig"]
