"""OfflineSingleAgentEnvRunner (RLlib's name): a SingleAgentEnvRunner that also writes every step it
samples to Parquet under `config.offline_data(output=...)`, in RLlib's columns (columns.py).

Written with pyarrow (Ray Data's `write_parquet` would launch a Ray task per write) under a temporary
name, renamed when complete, so a killed run leaves only whole files.
"""

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from rlcourse.env.registry import EnvCreator
from rlcourse.env.single_agent_env_runner import SingleAgentEnvRunner
from rlcourse.env.single_agent_episode import SingleAgentEpisode
from rlcourse.offline.columns import episodes_to_table
from rlcourse.utils.validation import fail

if TYPE_CHECKING:
    from rlcourse.algorithms.algorithm_config import AlgorithmConfig


def make_output_dir(config: Any, env_name: str) -> Path:
    """`config.output`/`env_name`, created and writable, else a ConfigError naming `output`."""
    if not isinstance(config.output, str | os.PathLike):
        fail(config, "output", "pass a folder path (str) to record into.")
    folder = Path(config.output) / env_name
    try:
        folder.mkdir(parents=True, exist_ok=True)
        problem = None if os.access(folder, os.W_OK) else "not writable"
    except OSError as e:
        problem = e.strerror
    if problem:
        fail(config, "output", f"cannot write to the folder {folder} ({problem}): pass a folder "
             "that can be created and written to.")
    return folder


class OfflineSingleAgentEnvRunner(SingleAgentEnvRunner):
    """Records what it samples: every `sample()` call with `output_max_rows_per_file=None`, else
    full files of that many rows (the rest on `stop()` with `output_write_remaining_data`)."""

    def __init__(self, config: "AlgorithmConfig", env_creator: EnvCreator | None = None,
                 worker_index: int = 0):
        super().__init__(config, env_creator, worker_index)
        self.output_dir = make_output_dir(config, self.env_name.lower())
        kind = "eval-" if config.in_evaluation else ""  # evaluation runners have their own files
        self.file_prefix = f"run-{kind}{worker_index:06d}"
        self.token = os.urandom(4).hex()  # a new run in the same folder never overwrites a file
        self._tables: list[pa.Table] = []
        self._num_rows = self._num_files = 0

    def sample(self, num_timesteps: int | None = None, num_episodes: int | None = None,
               explore: bool | None = None) -> list[SingleAgentEpisode]:
        episodes = super().sample(num_timesteps, num_episodes, explore)
        self.record(episodes)
        return episodes

    def record(self, episodes: list[SingleAgentEpisode]) -> None:
        """Buffer the episodes' rows and write the files that are due."""
        table = episodes_to_table(episodes)
        if table.num_rows:
            self._tables.append(table)
            self._num_rows += table.num_rows
        max_rows = self.config.output_max_rows_per_file
        if max_rows is None:
            self._write(self._num_rows)
        while max_rows is not None and self._num_rows >= max_rows:
            self._write(max_rows)

    def _write(self, num_rows: int) -> None:
        """Write the first `num_rows` buffered rows as one file; keep the rest."""
        if num_rows == 0:
            return
        rows = pa.concat_tables(self._tables)
        self._num_files += 1
        name = f"{self.file_prefix}-{self._num_files:06d}-{self.token}.parquet"
        temporary = self.output_dir / f".{name}.tmp"  # readers skip it: hidden, not *.parquet
        pq.write_table(rows.slice(0, num_rows), temporary)
        os.replace(temporary, self.output_dir / name)
        rest = rows.slice(num_rows)
        self._tables, self._num_rows = ([rest] if rest.num_rows else []), rest.num_rows

    def stop(self) -> None:
        if self.config.output_write_remaining_data:
            self._write(self._num_rows)
        super().stop()
