"""CartPole with the bugs of lesson 11 (diagnosing a run) built in, as env wrappers.

`broken_cartpole(config)` makes CartPole-v1 (time limit `max_episode_steps`) and wraps it as
`config` asks:
- `"truncation_as_termination": True` reports the time limit's truncation as a termination: the
  classic `done = terminated or truncated`, which makes the learner treat the last step of an
  episode that was merely cut off as the end of the world (no bootstrap from V(s_T));
- `"sensor_units": True` observes the cart as its encoder reports it, in millimetres from the
  track's left end and millimetres per second, beside the pole's angle and angular velocity in
  radians: one input in the thousands, the one that matters most below one, which a tanh network
  cannot use until they are normalized;
- `"reward_scale": k` multiplies every reward by k.

Use it as `config.environment(broken_cartpole, env_config={"sensor_units": True})`.
"""

from typing import Any

import gymnasium as gym
import numpy as np

# The cart's position measured from the track's left end (-2.4 m) and its velocity, in millimetres;
# the pole's angle and angular velocity stay in radians.
SENSOR_OFFSET = np.array([2400.0, 0.0, 0.0, 0.0], dtype=np.float32)
SENSOR_SCALE = np.array([1000.0, 1000.0, 1.0, 1.0], dtype=np.float32)


class TruncationAsTermination(gym.Wrapper):
    """Reports `terminated = terminated or truncated` and `truncated = False`: the bug to show."""

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated or truncated, False, info


class SensorUnits(gym.ObservationWrapper):
    """CartPole's observation with the cart in millimetres from the track's left end."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        low = env.observation_space.low * SENSOR_SCALE + SENSOR_OFFSET
        high = env.observation_space.high * SENSOR_SCALE + SENSOR_OFFSET
        self.observation_space = gym.spaces.Box(np.maximum(low, np.finfo(np.float32).min),
                                                np.minimum(high, np.finfo(np.float32).max),
                                                dtype=np.float32)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return (observation * SENSOR_SCALE + SENSOR_OFFSET).astype(np.float32)


def broken_cartpole(config: dict | None = None) -> gym.Env:
    """CartPole-v1 with the bugs `config` names (see the module's docstring)."""
    config = dict(config or {})
    env = gym.make("CartPole-v1", max_episode_steps=int(config.get("max_episode_steps", 500)))
    if config.get("truncation_as_termination", False):
        env = TruncationAsTermination(env)
    if config.get("sensor_units", False):
        env = SensorUnits(env)
    scale = float(config.get("reward_scale", 1.0))
    if scale != 1.0:
        env = gym.wrappers.TransformReward(env, lambda reward: reward * scale)
    return env
