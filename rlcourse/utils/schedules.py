"""Piecewise-linear schedules in RLlib's form: a list of [timestep, value] pairs.

    [[0, 1.0], [10000, 0.05]]: 1.0 at step 0, falling linearly to 0.05 at step 10,000, then 0.05.
"""

import numpy as np


def scheduled_value(schedule: list, timestep: int) -> float:
    """The schedule's value at `timestep` (the first value before it starts, the last after)."""
    steps, values = zip(*schedule, strict=True)
    return float(np.interp(timestep, steps, values))
