"""Checkpoints: an Algorithm's state in a directory, written atomically and loaded without pickle.

    <dir>/rlcourse_checkpoint.json   the config, counters, RNG and EnvRunner states (JSON), and the
                                     SHA-256 of every other file
    <dir>/learner.pt                 the RLModule's weights, the optimizer's state, torch's RNG state

Everything is written into a temporary directory next to `<dir>`, flushed to disk, then renamed into
place: a crash leaves the previous checkpoint (or none), never half of one. Tensors are read with
`torch.load(weights_only=True)` and the rest is JSON, so loading a checkpoint cannot run code.
A truncated or edited file fails its SHA-256 check with an error that names it.
"""

import hashlib
import json
import os
import shutil
from importlib import import_module
from pathlib import Path
from typing import Any

STATE_FILE = "rlcourse_checkpoint.json"
FORMAT_VERSION = 1


class CheckpointError(ValueError):
    """A checkpoint cannot be written or read; the message names the file or setting and the fix."""


# -- the config as JSON ---------------------------------------------------------------------------

def _import_path(value: Any, setting: str) -> dict[str, str]:
    """A class or function as {"__import__": "module:qualname"}; the loader imports it again."""
    qualname = getattr(value, "__qualname__", "")
    if "<" in qualname:  # <lambda> or <locals>: nothing to import it from
        raise CheckpointError(
            f"Cannot save config.{setting}={value!r}: it is defined inside a function or is a "
            "lambda. Use a module-level class or function, or give the env a name with "
            "rlcourse.register_env(name, creator) and pass the name.")
    return {"__import__": f"{value.__module__}:{qualname}"}


def config_to_json(config: Any) -> dict[str, Any]:
    """The config's settings as JSON-compatible values (classes and functions by import path)."""
    document = {}
    for setting, value in config.to_dict().items():
        if isinstance(value, type) or callable(value):
            value = _import_path(value, setting)
        try:
            json.dumps(value, allow_nan=True)
        except (TypeError, ValueError):
            raise CheckpointError(f"Cannot save config.{setting}={value!r} as JSON: use numbers, "
                                  "strings, lists and dicts in settings such as env_config.") from None
        document[setting] = value
    return document


def _resolve(value: Any, setting: str) -> Any:
    if not (isinstance(value, dict) and set(value) == {"__import__"}):
        return value
    module, _, qualname = value["__import__"].partition(":")
    try:
        obj = import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        raise CheckpointError(
            f"The checkpoint's config.{setting} is {module}.{qualname}, which this process cannot "
            f"import. Define or import it (e.g. run the notebook cell that defines {qualname}) "
            "before loading the checkpoint.") from None
    return obj


def config_from_json(document: dict[str, Any]) -> Any:
    """Rebuild the config written by `config_to_json` (its class must be an AlgorithmConfig)."""
    from rlcourse.algorithms.algorithm_config import AlgorithmConfig

    settings = {name: _resolve(value, name) for name, value in document.items()}
    module, _, name = str(settings.get("config_class", "")).partition(":")
    try:
        config_class = getattr(import_module(module), name)
    except (ImportError, AttributeError, ValueError):
        config_class = None
    if not (isinstance(config_class, type) and issubclass(config_class, AlgorithmConfig)):
        raise CheckpointError(f"The checkpoint's config_class {settings.get('config_class')!r} is "
                              "not an AlgorithmConfig subclass this process can import.")
    return AlgorithmConfig.from_dict(settings)


# -- files ----------------------------------------------------------------------------------------

def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_checkpoint(path: str | os.PathLike, state: dict[str, Any],
                     tensor_files: dict[str, Any]) -> Path:
    """Write `state` (JSON-compatible) and `tensor_files` (file name -> object of tensors) to `path`.

    Returns the checkpoint's absolute path. An existing checkpoint there is replaced.
    """
    import torch

    path = Path(path).resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.writing-{os.getpid()}-{os.urandom(4).hex()}"
    tmp.mkdir()
    try:
        digests = {}
        for name, obj in tensor_files.items():
            torch.save(obj, tmp / name)
            digests[name] = _sha256(tmp / name)
        document = {"format": FORMAT_VERSION, "files": digests, **state}
        (tmp / STATE_FILE).write_text(json.dumps(document))
        for name in (*tensor_files, STATE_FILE):
            _fsync(tmp / name)
        _fsync(tmp)
        _move_into_place(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path


def _move_into_place(tmp: Path, path: Path) -> None:
    """Rename `tmp` to `path`; an old checkpoint there is moved aside first and deleted after."""
    if not path.exists():
        os.rename(tmp, path)
        return
    if not (path / STATE_FILE).is_file():
        raise CheckpointError(f"{path} exists and is not a checkpoint; choose another directory "
                              "(saving does not overwrite other files).")
    old = path.parent / f".{path.name}.replaced-{os.urandom(4).hex()}"
    os.rename(path, old)
    os.rename(tmp, path)
    shutil.rmtree(old)


def read_checkpoint(path: str | os.PathLike) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return the checkpoint's JSON state and its tensor files (file name -> loaded object)."""
    import torch

    path = Path(path)
    state_file = path / STATE_FILE
    if not state_file.is_file():
        raise CheckpointError(f"No checkpoint at {path}: {STATE_FILE} is missing. Pass the "
                              "directory that Algorithm.save_to_path() returned.")
    try:
        state = json.loads(state_file.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{state_file} is not valid JSON ({e}): the file is truncated or "
                              "was edited. Restore it or use another checkpoint.") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT_VERSION:
        raise CheckpointError(f"{state_file} is not an rlcourse checkpoint of format "
                              f"{FORMAT_VERSION}.")
    tensors = {}
    for name, digest in state.get("files", {}).items():
        file = path / name
        if not file.is_file():
            raise CheckpointError(f"{file} is missing from the checkpoint.")
        if _sha256(file) != digest:
            raise CheckpointError(f"{file} does not match the SHA-256 recorded in {STATE_FILE}: it "
                                  "is truncated or was changed after saving. Use another checkpoint.")
        try:
            tensors[name] = torch.load(file, weights_only=True)
        except Exception as e:
            raise CheckpointError(f"{file} cannot be loaded as tensors: {e}") from None
    return state, tensors
