"""Checks on recorded data before a Learner sees it: files with the needed columns as plain (never
pickled) values, rows that fit the env's spaces, finite. Errors name file, column and fix."""

import os
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pyarrow as pa

from rlcourse.offline.columns import (
    ACTIONS,
    AGENT_ID,
    EPS_ID,
    MODULE_ID,
    NEXT_OBS,
    OBS,
    REWARDS,
    TERMINATEDS,
    TRUNCATEDS,
)
from rlcourse.utils.validation import ConfigError

IDS = {EPS_ID, AGENT_ID, MODULE_ID}  # strings by nature; every other column holds numbers
TEXT = (pa.types.is_string, pa.types.is_binary, pa.types.is_large_string, pa.types.is_large_binary)
PLAIN_COLUMNS = ("record with rlcourse, or in RLlib with config.offline_data("
                 "output_write_episodes=False, output_compress_columns=[])")
RECORDED = "Point input_ at a folder or files that config.offline_data(output=...) recorded"


class OfflineDataError(ValueError):
    """Recorded data that a Learner cannot train on; the message names file, column and fix."""


def parquet_files(input_: Any) -> list[str]:
    """Every *.parquet file under each path given (a file, or a folder searched recursively)."""
    paths = [input_] if isinstance(input_, str | os.PathLike) else input_
    if not (isinstance(paths, list | tuple) and paths
            and all(isinstance(path, str | os.PathLike) for path in paths)):
        raise ConfigError("input_", input_, ("an empty list names no data. " if paths == [] else
                          "pass a path (str), a list of paths, or a ray.data.Dataset. ")
                          + RECORDED + ".", "offline_data")
    files: list[str] = []
    for path in paths:
        path = Path(path)
        found = [path] if path.is_file() else sorted(
            p for p in path.rglob("*.parquet") if not p.name.startswith("."))
        if not found:
            raise OfflineDataError(
                f"config.offline_data(input_={str(path)!r}): no Parquet files (*.parquet) there"
                f"{'' if path.exists() else ' (the path does not exist)'}. {RECORDED}.")
        files += [str(p) for p in found]
    return files


def check_schema(schema: pa.Schema, columns: tuple[str, ...], where: str) -> None:
    """Refuse pickled columns (RLlib's packed observations, or whole episodes) and missing ones."""
    if "item" in schema.names and OBS not in schema.names:
        raise OfflineDataError(
            f"{where} holds whole episodes packed in one column ('item'), as RLlib records with "
            f"output_write_episodes=True; rlcourse reads one row per step: {PLAIN_COLUMNS}.")
    for field in schema:
        if field.name not in IDS and any(is_text(field.type) for is_text in TEXT):
            raise OfflineDataError(
                f"{where}, column {field.name!r}: holds {field.type} values, as RLlib writes a "
                "column pickled and LZ4-compressed (its default output_compress_columns=['obs', "
                "'new_obs']). rlcourse never unpickles data (a pickle can run any code): "
                f"{PLAIN_COLUMNS}.")
    if missing := [name for name in columns if name not in schema.names]:
        raise OfflineDataError(
            f"{where} has no column {missing[0]!r} (its columns: {schema.names}); the algorithm "
            f"needs {list(columns)}. Record the data with config.offline_data(output=...), in "
            "RLlib's column names.")


def stacked(values: np.ndarray, name: str, where: str) -> np.ndarray:
    """A column of one list per row (an object array of arrays) as one [rows, ...] array; a null
    row or lists of different lengths fail, naming the column."""
    if name in IDS or values.dtype != object or not len(values):
        return values
    nulls = [row for row, value in enumerate(values) if value is None]
    if nulls and len(nulls) < len(values):  # (nulls only: Arrow's null type, no data column)
        raise OfflineDataError(
            f"{where}, column {name!r}, row {nulls[0]}: no value (null); each row needs "
            f"one {name}. Drop those rows (e.g. with ray.data's filter) before training.")
    if not isinstance(values[0], np.ndarray | list):  # (bools with a null come as objects too)
        return values
    lengths = [len(value) for value in values]
    if min(lengths) != max(lengths):
        raise OfflineDataError(
            f"{where}, column {name!r}: lists of {min(lengths)} to {max(lengths)} values; each row "
            f"needs one {name} of the env's shape. Record the data with "
            "config.offline_data(output=...), or write the column as lists of one length.")
    return np.stack(values)


def check_rows(rows: dict[str, np.ndarray], observation_space: gym.Space, action_space: gym.Space,
               where: str) -> None:
    """Observations of the env's shape, Discrete actions inside the action space and Box ones of
    its shape (not bounds: runners record the module's unclipped actions, as RLlib's do), finite
    numbers."""
    if not len(rows[OBS]):
        raise OfflineDataError(f"{where} holds no rows. Record data first with "
                               "config.offline_data(output=...), or leave out empty files.")
    for name in (OBS, NEXT_OBS):
        if name in rows and rows[name].shape[1:] != observation_space.shape:
            raise OfflineDataError(
                f"{where}, column {name!r}: observations of shape {rows[name].shape[1:]}, but the "
                f"env's observation_space is {observation_space}. Train on the env the data was "
                "recorded in (config.environment(...), same env_config), or record it again.")
    actions = rows.get(ACTIONS)
    if actions is not None and isinstance(action_space, gym.spaces.Discrete):
        check_discrete_actions(actions, action_space, where)
    if actions is not None and isinstance(action_space, gym.spaces.Box) and (
            actions.shape[1:] != action_space.shape):
        raise OfflineDataError(
            f"{where}, column 'actions': actions of shape {actions.shape[1:]}, but the env's "
            f"action_space is {action_space}. Train on the env the data was recorded in.")
    for name in (REWARDS, TERMINATEDS, TRUNCATEDS):
        if name in rows and (rows[name].ndim != 1 or rows[name].dtype.kind not in "biuf"):
            found = (f"values of shape {rows[name].shape[1:]}" if rows[name].ndim != 1
                     else f"{rows[name].dtype} values")
            raise OfflineDataError(
                f"{where}, column {name!r}: {found}, where each row needs one number (or bool). "
                "Write the column as one plain value per row, as config.offline_data(output=...) "
                "records it.")
    for name, values in rows.items():
        if values.dtype.kind == "f" and not np.isfinite(values).all():
            row = int(np.flatnonzero((~np.isfinite(values.reshape(len(values), -1))).any(axis=1))[0])
            raise OfflineDataError(
                f"{where}, column {name!r}, row {row}: a non-finite value "
                f"({values[row]!r}) would make every weight NaN. Drop or fix those rows (e.g. "
                "with ray.data's filter) before training.")


def check_discrete_actions(actions: np.ndarray, space: gym.spaces.Discrete, where: str) -> None:
    """One whole number per row in [start, start + n); the error names the first bad row."""
    fix = "Train on the env the data was recorded in, or record it again."
    if actions.ndim != 1:
        problem = f"actions of shape {actions.shape[1:]}, where each row needs one whole number"
    elif not np.issubdtype(actions.dtype, np.integer):
        rows = np.flatnonzero(np.isnan(actions)) if actions.dtype.kind == "f" else []
        row = int(rows[0]) if len(rows) else 0
        problem = (f"the actions are {actions.dtype} (row {row}: {actions[row]}), and Discrete "
                   "actions must be integers")
        fix = ("Write the column as integers (a column with a null, NaN in NumPy, is read as "
               "floats: drop those rows first).")
    else:
        rows = np.flatnonzero((actions < space.start) | (actions >= space.start + space.n))
        if not len(rows):
            return
        problem = f"row {rows[0]}: action {actions[rows[0]]}"
    raise OfflineDataError(f"{where}, column 'actions': values outside the env's action space "
                           f"{space}: {problem}. {fix}")
