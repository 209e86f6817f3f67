"""IMPALA: `impala.py` (settings and the asynchronous training step), `learner_thread.py`,
`impala_learner.py` (the loss) and `vtrace.py` (off-policy targets)."""

from rlcourse.algorithms.impala.impala import IMPALA, IMPALAConfig

__all__ = ["IMPALA", "IMPALAConfig"]
