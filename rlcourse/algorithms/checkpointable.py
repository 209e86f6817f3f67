"""Checkpointable: a base class that saves and restores an object through methods it writes.

RLlib's boundary (rllib/utils/checkpoints.py): a subclass (Algorithm, in algorithm.py) writes its
state, in the abstract methods below; this base writes the checkpoint directory around it, once:

    save_to_path(path)         get_state() -> the directory, written atomically
    restore_from_path(path)    the files, read and verified (utils/checkpoints.py) -> set_state()
    from_checkpoint(path)      the files -> _build_from_state() (a new object) -> set_state()
"""
import abc
import os
from collections.abc import Iterable
from typing import Any, Self

from rlcourse.utils.checkpoints import CheckpointError, read_checkpoint, write_checkpoint

State = tuple[dict[str, Any], dict[str, Any]]  # (JSON-compatible state, {file name: tensors})


class Checkpointable(abc.ABC):
    """save_to_path / restore_from_path / from_checkpoint over a subclass's get_state / set_state."""

    @abc.abstractmethod
    def get_state(self) -> State:
        """Everything a continued run needs: (JSON-compatible state, {file name: tensors})."""

    @abc.abstractmethod
    def set_state(self, state: dict[str, Any], tensors: dict[str, Any]) -> None:
        """Take back what `get_state` returned. Check all of it before applying any, so that a
        state that does not fit raises and leaves this object as it was."""

    @classmethod
    @abc.abstractmethod
    def _build_from_state(cls, state: dict[str, Any], source: str,
                          allowed: Iterable[Any]) -> Self:
        """A new object built as the one that saved `state` was (not restored yet). `source` names
        the checkpoint in errors; `allowed`: see `from_checkpoint`."""

    @abc.abstractmethod
    def on_checkpoint_loaded(self) -> None:
        """Called after `restore_from_path` or `from_checkpoint` restored a checkpoint."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Release what this object holds; `from_checkpoint` calls it when the restore fails."""

    def save_to_path(self, path: str | os.PathLike) -> str:
        """Write a checkpoint to directory `path` (replacing one there); return its absolute path."""
        state, tensors = self.get_state()
        return str(write_checkpoint(path, state, tensors))

    def restore_from_path(self, path: str | os.PathLike) -> None:
        """Continue from the checkpoint in `path` (saved by an object with the same settings)."""
        state, tensors = read_checkpoint(path)
        try:
            self.set_state(state, tensors)
        except CheckpointError as e:
            raise CheckpointError(f"{path}: {e}") from None
        self.on_checkpoint_loaded()

    @classmethod
    def from_checkpoint(cls, path: str | os.PathLike, allowed: Iterable[Any] = ()) -> Self:
        """Build the checkpoint's object from its saved state and restore it.

        Loading imports no class or function because the checkpoint names it (an edited file must
        not run code): an Algorithm's config may name rlcourse's own classes, register_env names and
        gymnasium ids. Pass the classes and env creators of your own that it names in `allowed`,
        e.g. `Algorithm.from_checkpoint(path, allowed=[MyCallbacks, make_my_env])`.
        """
        state, tensors = read_checkpoint(path)
        restored = cls._build_from_state(state, f"The checkpoint {path}", allowed)
        try:
            restored.set_state(state, tensors)
        except BaseException:
            restored.stop()
            raise
        restored.on_checkpoint_loaded()
        return restored
