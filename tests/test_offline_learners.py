"""Data-parallel offline learners (RLlib's `OfflineData.sample(num_shards=...)`): each Learner actor
reads its own split of the recorded rows, none twice, and their gradients are all-reduced as online."""

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import gymnasium as gym
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import assert_learners_updated_together
from ray.data.extensions import ArrowTensorArray

from rlcourse.algorithms.bc import BCConfig
from rlcourse.offline.offline_data import OfflineData

ROWS = 80


@pytest.fixture
def numbered_rows(tmp_path: Path) -> Path:
    """80 CartPole rows in two files, each row's first observation its number."""
    obs = np.zeros((ROWS, 4), np.float32)
    obs[:, 0] = np.arange(ROWS)
    for i, rows in enumerate(np.split(np.arange(ROWS), 2)):
        pq.write_table(pa.table({"obs": ArrowTensorArray.from_numpy(obs[rows]),
                                 "actions": rows % 2}), tmp_path / f"part-{i}.parquet")
    return tmp_path


def test_each_learners_split_is_its_own_and_together_they_cover_the_data(ray_session,
                                                                         numbered_rows):
    space = gym.make("CartPole-v1")
    data = OfflineData(BCConfig().offline_data(input_=str(numbered_rows)), space.observation_space,
                       space.action_space)
    readers = data.sample(10, num_shards=2)
    assert data.sample(10, num_shards=2) is readers  # made once: each learner keeps its reader

    def two_epochs(reader) -> list[np.ndarray]:  # splits are read at once, as learners do
        return [reader.next_batch()["obs"][:, 0] for _ in range(8)]

    try:
        with ThreadPoolExecutor(2) as pool:
            first, second = (np.concatenate(rows).astype(int)
                             for rows in pool.map(two_epochs, readers))
    finally:
        data.stop()
    assert not set(first) & set(second)
    assert sorted(set(first) | set(second)) == list(range(ROWS))
    assert len(first) == len(second) == ROWS  # each its half, twice (epochs of equal steps)


def test_two_learners_read_their_own_rows_and_step_together(ray_session, algo_factory,
                                                            numbered_rows):
    algo = algo_factory(BCConfig().environment("CartPole-v1").env_runners(num_env_runners=0)
                        .offline_data(input_=str(numbered_rows))
                        .training(train_batch_size_per_learner=10)
                        .learners(num_learners=2, num_cpus_per_learner=0.5))
    group = algo.learner_group
    before = group.get_weights()
    result = algo.train()
    assert_learners_updated_together(group, before)
    assert result["num_env_steps_trained_lifetime"] == ROWS  # one pass: 4 steps of 10 rows on each
    # The driver's readers never read: the rows went from Ray's object store to the learners.
    assert all(reader._batches is None for reader in algo.offline_data._readers)
