"""CQLPreLearner: recorded rows as the one-step transitions (s, a, r, s', terminated) that SAC's
update takes, each of weight 1 (offline data has no replay priorities)."""

import numpy as np

from rlcourse.offline.columns import ACTIONS, NEXT_OBS, OBS, REWARDS, TERMINATEDS
from rlcourse.offline.offline_prelearner import OfflinePreLearner


class CQLPreLearner(OfflinePreLearner):
    """The OfflinePreLearner's checked obs and actions, plus rewards, next observations and ends."""

    columns = (OBS, ACTIONS, REWARDS, NEXT_OBS, TERMINATEDS)

    def __call__(self, rows: dict[str, np.ndarray], where: str) -> dict[str, np.ndarray]:
        batch = super().__call__(rows, where)
        num_rows = len(batch[ACTIONS])
        return {**batch, NEXT_OBS: batch[NEXT_OBS].astype(np.float32, copy=False),
                ACTIONS: batch[ACTIONS].astype(np.float32, copy=False),
                REWARDS: batch[REWARDS].astype(np.float32, copy=False),
                "n_step": np.ones(num_rows, np.int64), "weights": np.ones(num_rows, np.float32)}
