"""`config.environment(clip_rewards=...)`, as RLlib's: the EnvRunner clips the rewards it records,
so the Learner trains on clipped rewards while reported returns stay the env's."""

from typing import Any

import numpy as np


def clip_rewards(rewards: np.ndarray, setting: Any) -> np.ndarray:
    """None or False: as they are; True: their sign; c: into [-c, c]; (low, high): into [low, high]."""
    if setting is None or setting is False:
        return rewards
    if setting is True:
        return np.sign(rewards).astype(rewards.dtype)
    low, high = (-setting, setting) if isinstance(setting, int | float) else setting
    return np.clip(rewards, low, high).astype(rewards.dtype)


def check_clip_rewards(setting: Any) -> str | None:
    """What is wrong with a clip_rewards setting, or None if it is fine."""
    if setting is None or isinstance(setting, bool):
        return None
    if isinstance(setting, int | float):
        return None if setting > 0 else "a number c clips into [-c, c]: use c > 0."
    if (isinstance(setting, list | tuple) and len(setting) == 2
            and all(isinstance(v, int | float) and not isinstance(v, bool) for v in setting)
            and setting[0] < setting[1]):
        return None
    return ("use None or False (no clipping), True (the reward's sign), a number c > 0 (clip into "
            "[-c, c]) or a pair (low, high) with low < high.")
