"""OfflineData (RLlib's name): recorded rows, checked before training (file by file with pyarrow,
so errors name the file; a ray.data.Dataset batch by batch), streamed as the Learner's batches."""

import inspect
import logging
from collections.abc import Generator
from typing import Any

import gymnasium as gym
import numpy as np
import pyarrow as pa
import pyarrow.dataset
import pyarrow.parquet as pq
import ray.data

from rlcourse.offline.offline_data_checks import (
    OfflineDataError,
    check_rows,
    check_schema,
    parquet_files,
    stacked,
)
from rlcourse.offline.offline_prelearner import OfflinePreLearner
from rlcourse.utils import resources
from rlcourse.utils.validation import fail

# RLlib's default iter_batches_kwargs: Ray Data reads two batches ahead while the learner updates.
ITER_BATCHES_DEFAULTS = {"prefetch_batches": 2}


def table_to_numpy(table: pa.Table, where: str = "the table") -> dict[str, np.ndarray]:
    """Each column as one array: Ray Data's tensor columns and list columns as [rows, ...] arrays
    (lists of different lengths fail, naming `where` and the column)."""
    columns = {}
    for name, column in zip(table.column_names, table.columns, strict=True):
        array = column.combine_chunks()
        if isinstance(array, pa.ExtensionArray) and hasattr(array, "to_numpy"):
            columns[name] = array.to_numpy()
        else:  # list columns come as object arrays of arrays, which `stacked` stacks
            columns[name] = stacked(array.to_numpy(zero_copy_only=False), name, where)
    return columns


def _set_up_ray_data() -> None:
    """No progress bars or log lines in a notebook's output; rows in the data's order, however
    many batches Ray Data reads ahead, so that a seeded run repeats."""
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    logging.getLogger("ray.data._internal.progress").setLevel(logging.ERROR)
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.execution_options.preserve_order = True


class BatchReader:
    """Batches of `batch_size` rows from `data` (a Dataset, or a DataIterator over one learner's
    split) made by `prelearner`, epoch after epoch. Picklable: each Learner actor gets one."""

    def __init__(self, data: Any, prelearner: OfflinePreLearner, where: str, batch_size: int,
                 iter_batches_kwargs: dict):
        self.data, self.prelearner, self.where = data, prelearner, where
        self.batch_size, self.iter_batches_kwargs = batch_size, iter_batches_kwargs
        self._batches: Generator[dict[str, np.ndarray], None, None] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**vars(self), "_batches": None}  # (a running read stays where it runs)

    def next_batch(self) -> dict[str, np.ndarray]:
        """The next learner batch; the data starts again once read through."""
        batch = next(self._batches, None) if self._batches is not None else None
        if batch is None:
            self._batches = (batch for batch in self.data.iter_batches(
                batch_size=self.batch_size, batch_format="numpy", drop_last=True,
                **self.iter_batches_kwargs))
            batch = next(self._batches)
        return self.prelearner(batch, self.where)

    def close(self) -> None:
        """End the running read (before Ray shuts down, else it fails at exit)."""
        if self._batches is not None:
            self._batches.close()
        self._batches = None


def _names(*functions: Any) -> set[str]:
    """The keyword arguments that all of `functions` take by name."""
    return set.intersection(*(set(inspect.signature(f).parameters) for f in functions))


# Where offline_data(...)'s dicts go: read_parquet passes the names it lacks on to PyArrow's scanner;
# iter_batches' batch_size (train_batch_size_per_learner), batch_format and drop_last are set here.
READ_ARGS = (_names(ray.data.read_parquet) | _names(pyarrow.dataset.Scanner.from_fragment)
             | {"dataset_kwargs", "_block_udf"}) - {"paths", "fragment", "arrow_parquet_args",
                                                    "filter"}  # (read_parquet refuses filter=)
ITER_ARGS = _names(ray.data.Dataset.iter_batches, ray.data.DataIterator.iter_batches) - {
    "self", "batch_size", "batch_format", "drop_last"}


def check_read_settings(config: Any) -> None:
    """offline_data(...)'s read options, before any read: dicts of keyword arguments that the Ray
    Data function they go to takes (and that a read reaches), materialize_data a bool."""
    if not isinstance(config.materialize_data, bool):
        fail(config, "materialize_data", "use True (the rows go to Ray's object store once) or "
             "False (Ray Data streams them from the files).")
    for setting, allowed, function in (("input_read_method_kwargs", READ_ARGS, "read_parquet"),
                                       ("iter_batches_kwargs", ITER_ARGS, "Dataset.iter_batches")):
        kwargs = getattr(config, setting)
        unknown = sorted(set(kwargs) - allowed) if isinstance(kwargs, dict) else kwargs
        if unknown or not isinstance(kwargs, dict):
            fail(config, setting, f"pass a dict of the keyword arguments of ray.data.{function} "
                 f"that rlcourse passes on, {sorted(allowed)}; not {unknown}."
                 + (" The batch size is config.training(train_batch_size_per_learner=...)."
                    if unknown == ["batch_size"] and setting == "iter_batches_kwargs" else ""))
    if config.input_read_method_kwargs and (config.materialize_data
                                            or isinstance(config.input_, ray.data.Dataset)):
        fail(config, "input_read_method_kwargs", "only ray.data.read_parquet takes them, which "
             "reads Parquet paths with materialize_data=False (with True, the rows checked file by "
             "file go to Ray's object store as they are): set materialize_data=False, or leave "
             "input_read_method_kwargs out.")


class OfflineData:
    """Reads `config.input_` (Parquet paths, or a ray.data.Dataset) and hands out checked batches
    made by `config.prelearner_class` (else `config.get_default_prelearner_class()`)."""

    def __init__(self, config: Any, observation_space: gym.Space, action_space: gym.Space):
        self.config = config
        prelearner_class = config.prelearner_class or config.get_default_prelearner_class()
        self.prelearner = prelearner_class(config, observation_space, action_space)
        columns = self.prelearner.columns
        check_read_settings(config)
        if isinstance(config.input_, ray.data.Dataset):
            self.where = "the ray.data.Dataset given as config.offline_data(input_=...)"
            _set_up_ray_data()
            schema = config.input_.schema()  # None: no block to tell (an empty Dataset)
            if schema is None:
                raise OfflineDataError(f"{self.where} holds no rows.")
            if isinstance(schema.base_schema, pa.Schema):  # Arrow's, for data held as Arrow
                check_schema(schema.base_schema, columns, self.where)
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
            _set_up_ray_data()
            # materialize_data: the rows just checked go to Ray's object store once; else Ray
            # Data streams them from the files as the learner asks.
            self.data = ray.data.from_arrow(tables) if config.materialize_data else (
                ray.data.read_parquet(self.files, **config.input_read_method_kwargs)
                .select_columns(list(columns)))
        self._readers: list[BatchReader] = []  # this process's one, or the learners'
        self._readers_for: tuple[int, int] | None = None  # (batch size, shards) they read

    def _check_file(self, path: str, observation_space: gym.Space, action_space: gym.Space,
                    columns: tuple[str, ...]) -> pa.Table:
        """Check one file's columns and rows (OfflineDataError names it); return the columns used."""
        try:
            schema, table = pq.read_schema(path), pq.read_table(path)
        except (pa.ArrowException, OSError) as e:
            raise OfflineDataError(
                f"The file {path} is not a readable Parquet file ({e}): point "
                "config.offline_data(input_=...) at files written by offline_data(output=...).") from e
        check_schema(schema, columns, f"The file {path}")
        if table.num_rows:
            where = f"The file {path}"
            check_rows(table_to_numpy(table, where), observation_space, action_space, where)
        return table.select(list(columns))

    def sample(self, num_samples: int, num_shards: int = 0
               ) -> dict[str, np.ndarray] | list[BatchReader]:
        """The next learner batch of `num_samples` rows; or, for `num_shards` Learner actors, one
        BatchReader each over an equal split (RLlib's `sample(return_iterator=True, num_shards=)`):
        rows go from Ray's object store to the learners, never through this process."""
        if (num_samples, num_shards) != self._readers_for:
            if self.num_rows // max(1, num_shards) < num_samples:
                raise OfflineDataError(
                    f"{self.where} hold {self.num_rows} rows, fewer than one batch of "
                    f"{num_samples}{f' for each of {num_shards} learners' if num_shards > 1 else ''}"
                    ": lower config.training(train_batch_size_per_learner=...) or record more data.")
            self.stop()
            splits = ([self.data] if num_shards == 0 else [self.data.iterator()] if num_shards == 1
                      else self.data.streaming_split(num_shards, equal=True))
            kwargs = {**ITER_BATCHES_DEFAULTS, **self.config.iter_batches_kwargs}
            self._readers = [BatchReader(split, self.prelearner, self.where, num_samples, kwargs)
                             for split in splits]
            self._readers_for = (num_samples, num_shards)
        return self._readers[0].next_batch() if num_shards == 0 else self._readers

    def stop(self) -> None:
        """End the running read here (the learners' readers end with the learners)."""
        for reader in self._readers:
            reader.close()
        self._readers, self._readers_for = [], None
