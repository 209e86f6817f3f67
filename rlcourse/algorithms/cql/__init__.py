"""CQL: `cql.py` (settings and the offline loop), `cql_learner.py` (SAC's losses with the
conservative penalty) and `cql_prelearner.py` (recorded rows as one-step transitions)."""

from rlcourse.algorithms.cql.cql import CQL, CQLConfig

__all__ = ["CQL", "CQLConfig"]
