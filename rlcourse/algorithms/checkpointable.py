"""Checkpointable: RLlib's base class (rllib/utils/checkpoints.py) that writes and reads the checkpoint
directory (utils/checkpoints.py) around a subclass's get_state / set_state (Algorithm's)."""
import abc
import os
from collections.abc import Iterable
from typing import Any, Self

from rlcourse.utils.checkpoints import CheckpointError, read_checkpoint, write_checkpoint

State = tuple[dict[str, Any], dict[str, Any]]  # (JSON-compatible state, {file name: tensors})


class Checkpointable(abc.ABC):
    """save_to_path / restore_from_path / from_checkpoint over what a subclass writes: get_state,
    set_state (a state that does not fit raises, changing nothing), _build_from_state (a new object
    as the one that saved `state` was), on_checkpoint_loaded, and stop (called if a restore fails)."""

    @abc.abstractmethod
    def get_state(self) -> State: ...

    @abc.abstractmethod
    def set_state(self, state: dict[str, Any], tensors: dict[str, Any]) -> None: ...

    @classmethod
    @abc.abstractmethod
    def _build_from_state(cls, state: dict[str, Any], source: str, allowed: Iterable[Any]) -> Self: ...

    @abc.abstractmethod
    def on_checkpoint_loaded(self) -> None: ...

    @abc.abstractmethod
    def stop(self) -> None: ...

    def save_to_path(self, path: str | os.PathLike) -> str:
        """Write a checkpoint to directory `path` (replacing one there); return its absolute path."""
        return str(write_checkpoint(path, *self.get_state()))

    def restore_from_path(self, path: str | os.PathLike) -> None:
        """Continue from the checkpoint in `path` (saved by an object with the same settings)."""
        self._restore(path, *read_checkpoint(path))

    def _restore(self, path: str | os.PathLike, state: dict[str, Any],
                 tensors: dict[str, Any]) -> None:
        try:
            self.set_state(state, tensors)
        except CheckpointError as e:
            raise CheckpointError(f"{path}: {e}") from None
        self.on_checkpoint_loaded()

    @classmethod
    def from_checkpoint(cls, path: str | os.PathLike, allowed: Iterable[Any] = ()) -> Self:
        """Build the checkpoint's object from its saved state and restore it. Loading imports nothing
        the checkpoint names (it must not run code) beyond rlcourse's classes, register_env names
        and gymnasium ids: pass your own, e.g. `allowed=[MyCallbacks, make_my_env]`."""
        state, tensors = read_checkpoint(path)
        restored = cls._build_from_state(state, f"The checkpoint {path}", allowed)
        try:
            restored._restore(path, state, tensors)
        except BaseException:
            restored.stop()  # a half-built object holds actors and envs
            raise
        return restored
