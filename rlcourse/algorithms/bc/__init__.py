"""Behavior cloning (BC): supervised learning of recorded actions from offline data."""

from rlcourse.algorithms.bc.bc import BC, BCConfig

__all__ = ["BC", "BCConfig"]
