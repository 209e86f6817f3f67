"""Learner connectors (RLlib's `rllib/connectors/learner/`): episodes in, the episodes a learner's
batch is built from out; set with `config.training(learner_connector=fn)`."""

from rlcourse.connectors.learner.frame_stacking import FrameStackingLearner

__all__ = ["FrameStackingLearner"]
