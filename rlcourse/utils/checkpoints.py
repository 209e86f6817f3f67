"""Checkpoints: an Algorithm's state in a directory, replaced atomically and loaded without pickle.

    <dir>/rlcourse_checkpoint.json   the manifest: the current version, each file's SHA-256, its own
    <dir>/v-<id>/state.json          the config, counters, RNG and EnvRunner states (JSON)
    <dir>/v-<id>/learner.pt          the RLModule's weights, the optimizer's and torch's RNG state
    <dir>/.lock                      held by the save in progress (flock)

A save writes a new version beside the current one, `os.replace`s the manifest, then deletes the old
version, so `<dir>` always holds the old or the new checkpoint. Reading runs no code (JSON, and
`torch.load(weights_only=True)`), and a file that fails its SHA-256 is named in the error. Format 1
(files directly in `<dir>`, JSON unchecked) still loads.
"""

import hashlib
import io
import json
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

STATE_FILE = "rlcourse_checkpoint.json"  # the manifest (format 2), or everything (format 1)
STATE_JSON = "state.json"
LOCK_FILE = ".lock"
FORMAT_VERSION = 2
READ_ATTEMPTS = 5  # a reader whose version a save replaced (and deleted) meanwhile reads again
# What saves create beside the manifest and lock: versions, and a manifest before its replace.
SAVED_NAME = re.compile(r"(\.manifest-)?v-[0-9a-f]{16}")
LEGACY_FILES = {"learner.pt"}  # what a format-1 checkpoint holds beside its JSON


class CheckpointError(ValueError):
    """A checkpoint cannot be written or read; the message names the file or setting and the fix."""


def _manifest_sha256(manifest: dict[str, Any]) -> str:
    """The SHA-256 of the manifest's other fields, so an edit of the manifest itself shows."""
    fields = {k: v for k, v in manifest.items() if k != "sha256"}
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file(path: Path, data: bytes, replace: Path | None = None) -> None:
    """Write `data` to `path` and onto the disk; with `replace`, then rename it over that file
    (atomic: a reader sees the old file or the new one)."""
    path.write_bytes(data)
    _fsync(path)
    if replace is not None:
        os.replace(path, replace)


@contextmanager
def _locked(root: Path) -> Iterator[None]:
    """Hold `root`'s lock, one save at a time; the kernel releases an flock even on SIGKILL."""
    import fcntl  # POSIX (Linux, macOS): imported here, so that importing rlcourse works anywhere

    fd = os.open(root / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _current(root: Path) -> set[str]:
    """The names in `root` that make up its checkpoint now (none if there is none)."""
    try:
        manifest = json.loads((root / STATE_FILE).read_text())
        return {*LEGACY_FILES} if manifest["format"] == 1 else {str(manifest["version"])}
    except (OSError, ValueError, TypeError, KeyError):
        return set()


def _remove_all_but(root: Path, keep: set[str]) -> None:
    """Delete `root`'s entries not in `keep` (called with the lock held, so no save is writing)."""
    for entry in root.iterdir():
        if entry.name in keep | {STATE_FILE, LOCK_FILE}:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            os.unlink(entry)


def check_checkpoint_dir(path: str | os.PathLike) -> Path:
    """`path` resolved, if a checkpoint can be saved there (a new or empty directory, or one holding
    a checkpoint); else CheckpointError. Commands call it before they train, not only after."""
    root = Path(path).resolve()
    existing = next(p for p in (root, *root.parents) if p.exists())
    if not existing.is_dir():
        raise CheckpointError(f"{existing} is a file; pass a directory for the checkpoint.")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise CheckpointError(f"{existing} is not writable: save into a directory you may write to.")
    others = sorted(p.name for p in root.iterdir() if p.name not in {STATE_FILE, LOCK_FILE,
                    *LEGACY_FILES} and not SAVED_NAME.fullmatch(p.name)) if root.exists() else []
    if others:  # checked before the lock file is made in a folder that is not ours
        raise CheckpointError(f"{root} holds {others[:3]}, which are not part of a checkpoint: "
                              "save into a new or empty directory (saving does not overwrite "
                              "other files).")
    return root


def write_checkpoint(path: str | os.PathLike, state: dict[str, Any],
                     tensor_files: dict[str, Any]) -> Path:
    """Write `state` (JSON-compatible) and `tensor_files` (file name -> object of tensors) to the
    directory `path` (new, empty, or holding a checkpoint, which is replaced); return its path."""
    import torch

    root = check_checkpoint_dir(path)
    root.mkdir(parents=True, exist_ok=True)
    files = {STATE_JSON: json.dumps(state).encode()}
    for name, obj in tensor_files.items():
        buffer = io.BytesIO()
        torch.save(obj, buffer)
        files[name] = buffer.getvalue()
    with _locked(root):
        _remove_all_but(root, keep=_current(root))  # what killed saves left
        version = f"v-{os.urandom(8).hex()}"
        vdir = root / version
        vdir.mkdir()
        try:
            for name, data in files.items():
                write_file(vdir / name, data)
            _fsync(vdir)
            digests = {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}
            manifest = {"format": FORMAT_VERSION, "version": version, "files": digests}
            manifest["sha256"] = _manifest_sha256(manifest)
            # The instant the new checkpoint replaces the old:
            write_file(root / f".manifest-{version}", json.dumps(manifest).encode(),
                       replace=root / STATE_FILE)
        except BaseException:
            shutil.rmtree(vdir, ignore_errors=True)
            raise
        _fsync(root)  # the replace is on disk before the old version goes
        _remove_all_but(root, keep={version})
    return root


class _Replaced(Exception):
    """A file named by the manifest vanished: maybe a save replaced the checkpoint meanwhile."""


def _inside(root: Path, name: Any, where: str) -> Path:
    """`root / name` if `name` is a plain file name that stays inside `root`; else an error."""
    if not (isinstance(name, str) and name and name == Path(name).name and name not in (".", "..")):
        raise CheckpointError(f"{where} names the file {name!r}: a checkpoint's files are plain "
                              "names inside its directory (no '..', '/' or absolute paths).")
    path = root / name
    if not path.resolve().is_relative_to(root.resolve()):
        raise CheckpointError(f"{where} names {name!r}, a link to {path.resolve()}, outside the "
                              "checkpoint's directory: copy the file into the checkpoint instead.")
    return path


def _load_files(folder: Path, digests: Any, where: str) -> dict[str, bytes | Any]:
    """Verify each file against its SHA-256; return {name: loaded tensors, or JSON text's bytes}."""
    import torch

    if not isinstance(digests, dict):
        raise CheckpointError(f"{where} has no 'files' table: it is not an rlcourse checkpoint.")
    loaded = {}
    for name, digest in digests.items():
        file = _inside(folder, name, where)
        try:
            data = file.read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise _Replaced(f"{file} is missing: the checkpoint is incomplete (a file was deleted "
                            "or not copied with it). Use another checkpoint, or copy the whole "
                            "directory again.") from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise CheckpointError(f"{file} does not match the SHA-256 recorded in {STATE_FILE}: it "
                                  "is truncated or was changed after saving. Use another checkpoint.")
        if name == STATE_JSON:
            loaded[name] = data
            continue
        try:
            loaded[name] = torch.load(io.BytesIO(data), weights_only=True)
        except Exception as e:
            raise CheckpointError(f"{file} cannot be loaded as tensors: {e}") from None
    return loaded


def _parse(data: bytes, file: Path) -> dict[str, Any]:
    try:
        document = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{file} is not valid JSON ({e}): the file is truncated or was "
                              "edited. Restore it or use another checkpoint.") from None
    if not isinstance(document, dict):
        raise CheckpointError(f"{file} is not an rlcourse checkpoint.")
    return document


def _read_once(root: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    manifest_file = _inside(root, STATE_FILE, str(root))
    manifest = _parse(manifest_file.read_bytes(), manifest_file)
    if manifest.get("format") == 1:  # format 1: the state and the files beside it; JSON unchecked
        return manifest, _load_files(root, manifest.get("files"), str(manifest_file))
    if manifest.get("format") != FORMAT_VERSION:
        raise CheckpointError(f"{manifest_file} is not an rlcourse checkpoint of format 1 or "
                              f"{FORMAT_VERSION}.")
    if manifest.get("sha256") != _manifest_sha256(manifest):
        raise CheckpointError(f"{manifest_file} does not match its own SHA-256: it was edited "
                              "or damaged after saving. Use another checkpoint.")
    folder = _inside(root, manifest.get("version"), str(manifest_file))
    files = _load_files(folder, manifest["files"], str(manifest_file))
    if STATE_JSON not in files:
        raise CheckpointError(f"{manifest_file} lists no {STATE_JSON}: the checkpoint is incomplete.")
    return _parse(files.pop(STATE_JSON), folder / STATE_JSON), files


def checkpoint_root(path: str | os.PathLike) -> Path:
    """`path` as a checkpoint's directory, or CheckpointError if it holds none (a cheap check that
    commands make before they start Ray)."""
    root = Path(path)
    if not (root / STATE_FILE).is_file():
        raise CheckpointError(f"No checkpoint at {root}: {STATE_FILE} is missing. Pass the "
                              "directory that Algorithm.save_to_path() returned.")
    return root


def read_checkpoint(path: str | os.PathLike) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return the checkpoint's JSON state and its tensor files (file name -> loaded object)."""
    root = checkpoint_root(path)
    for attempt in range(1, READ_ATTEMPTS + 1):
        try:
            return _read_once(root)
        except _Replaced as e:  # a save may have replaced (and deleted) the version being read
            if attempt == READ_ATTEMPTS:
                raise CheckpointError(str(e)) from None
