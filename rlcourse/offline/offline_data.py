"""OfflineData (RLlib's name): recorded rows read through Ray Data, checked before training, and
streamed as the Learner's batches (through the `OfflinePreLearner`), epoch after epoch.

Paths are checked file by file with pyarrow first (cheap next to training, and the error can name
the file); a `ray.data.Dataset` given as `input_` is checked batch by batch as it streams.
"""

import logging
from collections.abc import Generator
from typing import Any

import gymnasium as gym
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import ray.data

from rlcourse.offline.offline_data_checks import (
    OfflineDataError,
    check_rows,
    check_schema,
    parquet_files,
)
from rlcourse.offline.offline_prelearner import OfflinePreLearner
from rlcourse.utils import resources


def table_to_numpy(table: pa.Table) -> dict[str, np.ndarray]:
    """Each column as one array: Ray Data's tensor columns as [rows, ...] arrays."""
    columns = {}
    for name, column in zip(table.column_names, table.columns, strict=True):
        array = column.combine_chunks()
        if isinstance(array, pa.ExtensionArray) and hasattr(array, "to_numpy"):
            columns[name] = array.to_numpy()
        elif pa.types.is_list(array.type) or pa.types.is_fixed_size_list(array.type):
            columns[name] = np.stack(array.to_numpy(zero_copy_only=False))
        else:
            columns[name] = array.to_numpy(zero_copy_only=False)
    return columns


def _quiet_ray_data() -> None:
    """No progress bars or per-execution log lines in a notebook's output (nor the warning that
    Ray Data logs when its progress bars are turned off)."""
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    logging.getLogger("ray.data._internal.progress").setLevel(logging.ERROR)
    ray.data.DataContext.get_current().enable_progress_bars = False


class OfflineData:
    """Reads `config.input_` (Parquet paths, or a ray.data.Dataset) and hands out checked batches
    made by `config.prelearner_class`, else by the algorithm's `default_prelearner_class`."""

    def __init__(self, config: Any, observation_space: gym.Space, action_space: gym.Space,
                 default_prelearner_class: type[OfflinePreLearner] = OfflinePreLearner):
        """`default_prelearner_class`: the algorithm's, where config.prelearner_class is None."""
        self.config = config
        prelearner_class = config.prelearner_class or default_prelearner_class
        self.prelearner = prelearner_class(config, observation_space, action_space)
        columns = self.prelearner.columns
        if isinstance(config.input_, ray.data.Dataset):
            self.where = "the ray.data.Dataset given as config.offline_data(input_=...)"
            _quiet_ray_data()
            schema = config.input_.schema().base_schema  # Arrow's, for data Ray Data holds as Arrow
            if isinstance(schema, pa.Schema):
                check_schema(schema, columns, self.where)
            self.data = config.input_.select_columns(list(columns))
            if config.materialize_data:
                self.data = self.data.materialize()
            self.num_rows = self.data.count()
            if not self.num_rows:
                raise OfflineDataError(f"{self.where} holds no rows.")
        else:
            self.files = parquet_files(config.input_)
            self.where = f"the {len(self.files)} files under config.offline_data(input_=...)"
            tables = [self._check_file(path, observation_space, action_space, columns)
                      for path in self.files]
            self.num_rows = sum(table.num_rows for table in tables)
            if not self.num_rows:
                raise OfflineDataError(f"{self.where} hold no rows: {self.files}. Record data "
                                       "first with config.offline_data(output=...).")
            resources.init_ray()  # after the checks: bad data fails without starting Ray
            _quiet_ray_data()
            # materialize_data: the rows just checked go to Ray's object store once (no read
            # tasks); else Ray Data streams them from the files, reading as the learner asks.
            self.data = ray.data.from_arrow(tables) if config.materialize_data else (
                ray.data.read_parquet(self.files, **config.input_read_method_kwargs)
                .select_columns(list(columns)))
        self._batch_size = 0  # of the batches being read
        self._batches: Generator[dict[str, np.ndarray], None, None] | None = None

    def _check_file(self, path: str, observation_space: gym.Space, action_space: gym.Space,
                    columns: tuple[str, ...]) -> pa.Table:
        """Check one file's columns and rows (OfflineDataError names it); return the columns used."""
        check_schema(pq.read_schema(path), columns, f"The file {path}")
        table = pq.read_table(path)
        if table.num_rows:
            check_rows(table_to_numpy(table), observation_space, action_space, f"The file {path}")
        return table.select(list(columns))

    def sample(self, num_samples: int) -> dict[str, np.ndarray]:
        """The next learner batch of `num_samples` rows; the data starts again once read through."""
        if num_samples != self._batch_size:
            self.stop()
            self._batch_size = num_samples
        for _ in range(2):  # the rest of this epoch, then (if it had no full batch) a new one
            if self._batches is None:
                self._batches = (batch for batch in self.data.iter_batches(
                    batch_size=num_samples, batch_format="numpy", drop_last=True,
                    **self.config.iter_batches_kwargs))
            batch = next(self._batches, None)
            if batch is not None:
                return self.prelearner(batch, self.where)
            self._batches = None
        raise OfflineDataError(
            f"{self.where} hold {self.num_rows} rows, fewer than one batch of {num_samples}: lower "
            "config.training(train_batch_size_per_learner=...) or record more data.")


    def stop(self) -> None:
        """End the running read (before Ray shuts down, which would leave it failing at exit)."""
        if self._batches is not None:
            self._batches.close()
            self._batches = None
