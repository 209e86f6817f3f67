"""OfflinePreLearner (RLlib's name): a batch of recorded rows as the Learner's batch. BC needs only
observations and actions: those columns, checked against the env's spaces, as the module takes them."""

from typing import Any

import gymnasium as gym
import numpy as np

from rlcourse.offline.columns import ACTIONS, OBS
from rlcourse.offline.offline_data_checks import check_rows, stacked


class OfflinePreLearner:
    """Called on every batch that Ray Data streams (`OfflineData.sample`)."""

    columns: tuple[str, ...] = (OBS, ACTIONS)  # what the batch keeps (and the data must have)

    def __init__(self, config: Any, observation_space: gym.Space, action_space: gym.Space):
        self.config, self.observation_space, self.action_space = config, observation_space, action_space

    def __call__(self, rows: dict[str, np.ndarray], where: str) -> dict[str, np.ndarray]:
        """The learner's batch from `rows` (numpy columns) read from `where` (named in errors)."""
        rows = {name: stacked(values, name, where) for name, values in rows.items()}
        check_rows(rows, self.observation_space, self.action_space, where)
        batch = {name: rows[name] for name in self.columns}
        batch[OBS] = batch[OBS].astype(np.float32, copy=False)
        return batch
