"""FrameStackingEnvToModule: the module acts on each sub-env's last `num_frames` frames stacked on
the channel axis (oldest first, zeros before an episode's first, as RLlib's). Episodes keep single
frames (and the `num_frames - 1` before a continued chunk) for FrameStackingLearner to restack, so
frames cross the object store once (benchmarks/frame_stacking_bytes.py)."""

from typing import Any

import gymnasium as gym
import numpy as np

from rlcourse.connectors.connector_v2 import ConnectorV2
from rlcourse.utils.validation import ConfigError


class FrameStackingEnvToModule(ConnectorV2):
    """Keeps each sub-env's stack [N, H, W, C * num_frames]: the runner `push`es every new frame
    and acts on `stacked`; observations pass through unchanged, for the episodes."""

    def __init__(self, num_frames: int = 1):
        self.num_frames = check_num_frames(num_frames, "FrameStackingEnvToModule",
                                           "env_to_module_connector", "env_runners")
        self.stacked: np.ndarray | None = None  # what the module sees, per sub-env

    def recompute_output_observation_space(self, input_observation_space: gym.Space,
                                           input_action_space: gym.Space) -> gym.Space:
        """The module's space: frames [H, W, C] stacked to [H, W, C * num_frames]."""
        space = input_observation_space
        if not (isinstance(space, gym.spaces.Box) and len(space.shape) == 3):
            raise ConfigError("env_to_module_connector", f"FrameStackingEnvToModule(num_frames="
                              f"{self.num_frames})", f"it stacks image frames [H, W, C], not "
                              f"{space}: wrap the env to return images (e.g. rlcourse.env."
                              "wrappers.atari_wrappers).", "env_runners")
        self.input_observation_space = space
        return gym.spaces.Box(np.tile(space.low, self.num_frames), np.tile(space.high, self.num_frames),
                              dtype=space.dtype)

    def __call__(self, observations: Any, *, update: bool = True) -> Any:
        return observations  # episodes record single frames; acting reads `stacked`

    def push(self, frames: np.ndarray, new_episode: np.ndarray | None = None) -> np.ndarray:
        """Add each sub-env's newest frame (`new_episode` rows, all at first, restart from zeros);
        return the stacks."""
        channels = frames.shape[-1]
        if self.stacked is None or new_episode is None:
            self.stacked = np.zeros((*frames.shape[:-1], channels * self.num_frames), frames.dtype)
        elif new_episode.any():
            self.stacked[new_episode] = 0
        self.stacked[..., :-channels] = self.stacked[..., channels:].copy()
        self.stacked[..., -channels:] = frames
        return self.stacked

    def lookback(self) -> np.ndarray:
        """The `num_frames - 1` frames before each sub-env's newest: [N, num_frames - 1, H, W, C]."""
        n, h, w, c = self.stacked.shape
        channels = c // self.num_frames
        older = self.stacked[..., :-channels].reshape(n, h, w, self.num_frames - 1, channels)
        return older.transpose(0, 3, 1, 2, 4).copy()


def check_num_frames(num_frames: Any, connector: str, setting: str, setter: str) -> int:
    """`num_frames` if a whole number >= 1, else a ConfigError naming `connector` and `setting`."""
    if not (isinstance(num_frames, int) and not isinstance(num_frames, bool) and num_frames >= 1):
        raise ConfigError(setting, f"{connector}(num_frames={num_frames!r})", "stack at least 1 "
                          f"frame, e.g. {connector}(num_frames=4).", setter)
    return num_frames


def stack_frames(frames: np.ndarray, num_frames: int) -> np.ndarray:
    """[T + num_frames - 1, H, W, C] frames as T stacks [T, H, W, C * num_frames], each the
    `num_frames` frames up to its own, oldest first (a strided view, copied once by reshape)."""
    windows = np.lib.stride_tricks.sliding_window_view(frames, num_frames, axis=0)  # [T,H,W,C,k]
    t, h, w, c, k = windows.shape
    return windows.transpose(0, 1, 2, 4, 3).reshape(t, h, w, k * c)
