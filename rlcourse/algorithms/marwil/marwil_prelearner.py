"""MARWIL's OfflinePreLearner (beta > 0): the rows' rewards, next observations and episode
boundaries too, for the learner's returns (BC's data may lack them)."""

import numpy as np

from rlcourse.offline.columns import EPS_ID, NEXT_OBS, OBS, REWARDS, TERMINATEDS
from rlcourse.offline.offline_prelearner import OfflinePreLearner


class MARWILOfflinePreLearner(OfflinePreLearner):
    """Adds `chunk_ends`: True on each row whose next row does not continue its episode (another
    `eps_id`, an observation that is not this row's `new_obs`, or the batch's last row)."""

    columns = (*OfflinePreLearner.columns, REWARDS, NEXT_OBS, TERMINATEDS, EPS_ID)

    def __call__(self, rows: dict[str, np.ndarray], where: str) -> dict[str, np.ndarray]:
        batch = super().__call__(rows, where)
        eps_id, new_obs = batch.pop(EPS_ID), batch[NEXT_OBS].astype(np.float32, copy=False)
        same_obs = new_obs[:-1] == batch[OBS][1:]
        continues = (eps_id[1:] == eps_id[:-1]) & same_obs.all(axis=tuple(range(1, same_obs.ndim)))
        return {**batch, NEXT_OBS: new_obs, REWARDS: batch[REWARDS].astype(np.float32, copy=False),
                "chunk_ends": np.append(~continues, True)}
