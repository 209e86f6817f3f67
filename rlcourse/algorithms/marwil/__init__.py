"""MARWIL (Wang et al. 2018): behavior cloning weighted by exp(beta * advantage); beta 0 is BC."""

from rlcourse.algorithms.marwil.marwil import MARWIL, MARWILConfig

__all__ = ["MARWIL", "MARWILConfig"]
