"""Off-policy estimators (RLlib's rllib/offline/estimators/): a policy's return judged from data
another policy recorded, without running it."""

from rlcourse.offline.estimators.weighted_importance_sampling import weighted_importance_sampling

__all__ = ["weighted_importance_sampling"]
