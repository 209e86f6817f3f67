"""Callbacks: hooks that run at fixed points of training (RLlib's `rllib/callbacks/`)."""

from rlcourse.callbacks.callbacks import Callbacks

__all__ = ["Callbacks"]
