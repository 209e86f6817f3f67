"""APPO: `appo.py` (settings; IMPALA's training step with a circular buffer) and `appo_learner.py`
(the clipped surrogate on V-trace advantages, and the target network)."""

from rlcourse.algorithms.appo.appo import APPO, APPOConfig

__all__ = ["APPO", "APPOConfig"]
