"""RLlib's Atari preprocessing for the new API stack. It never imports ale-py (gymnasium's "ale_py:"
prefix does, where the env is made), so `import rlcourse` and runners of other envs never load it."""

import gymnasium as gym
import numpy as np
from PIL import Image


class AtariPreprocessing(gym.Wrapper):
    """DeepMind's preprocessing (as gymnasium's AtariPreprocessing) of an ALE env made with
    `gym.make("ale_py:ALE/Pong-v5", frameskip=1, obs_type="grayscale")`: random no-op starts, each
    action repeated `frameskip` times with the max over the last two frames, grayscale frames resized
    to [dim, dim, 1] (channels-last: FrameStackingEnvToModule stacks them) in [-1, 1) as float32."""

    def __init__(self, env: gym.Env, dim: int = 84, frameskip: int = 4, noop_max: int = 30):
        super().__init__(env)
        frame = env.observation_space
        if len(frame.shape) != 2 or getattr(env.unwrapped, "_frameskip", 1) != 1:
            raise ValueError(f"wrap_atari_for_new_api_stack takes an ALE env that returns grayscale "
                             f"frames, one per step (observation_space {frame}): make it with "
                             "gym.make(id, frameskip=1, obs_type='grayscale').")
        self.dim, self.frameskip, self.noop_max = dim, frameskip, noop_max
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (dim, dim, 1), np.float32)

    def _frame(self, screen: np.ndarray) -> np.ndarray:
        small = np.asarray(Image.fromarray(screen).resize((self.dim, self.dim), Image.BOX))
        return (small.astype(np.float32) / 128.0 - 1.0)[..., None]

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        screen, info = self.env.reset(seed=seed, options=options)
        for _ in range(int(self.np_random.integers(1, self.noop_max + 1)) if self.noop_max else 0):
            screen, _, terminated, truncated, info = self.env.step(0)  # NOOP
            if terminated or truncated:
                screen, info = self.env.reset()
        return self._frame(screen), info

    def step(self, action: int):
        total, last_two = 0.0, []
        for _ in range(self.frameskip):
            screen, reward, terminated, truncated, info = self.env.step(action)
            total += float(reward)
            last_two = [*last_two[-1:], screen]
            if terminated or truncated:
                break
        return self._frame(np.maximum.reduce(last_two)), total, terminated, truncated, info


wrap_atari_for_new_api_stack = AtariPreprocessing  # RLlib's name (framestack: FrameStackingEnvToModule)
