"""What a client's episode must be before it reaches a learner: whole (terminated or truncated),
no longer than `max_episode_steps`, observations of the observation space's shape as float32,
actions inside the action space, finite rewards, observations and log-probabilities. A bad episode
raises ProtocolError naming the field, and its whole message is refused."""

import gymnasium as gym
import numpy as np

from rlcourse.env.external.rllink import ProtocolError, decode_array
from rlcourse.env.single_agent_episode import SingleAgentEpisode

EPISODE_FIELDS = {"obs", "actions", "rewards", "action_logp", "terminated", "truncated"}


def checked_array(data: dict, name: str, where: str, dtypes: tuple[str, ...], shape: tuple
                  ) -> np.ndarray:
    """Field `name` decoded, of one of `dtypes` and of `shape` (None: any length), finite."""
    values = decode_array(f"{where}.{name}", data.get(name))
    if values.dtype.name not in dtypes:
        raise ProtocolError(f"{where}.{name}: dtype {values.dtype.name}, expected one of {dtypes}.")
    if len(values.shape) != len(shape) or any(
            want is not None and got != want for got, want in zip(values.shape, shape, strict=True)):
        expected = tuple("T" if n is None else n for n in shape)
        raise ProtocolError(f"{where}.{name}: shape {values.shape}, expected {expected}.")
    if values.dtype.kind == "f" and not np.isfinite(values).all():
        at = int(np.argwhere(~np.isfinite(values))[0][0])
        raise ProtocolError(f"{where}.{name}: a NaN or infinite value at step {at}; NaN data "
                            "would make every weight NaN. Send finite numbers.")
    return values


def checked_ending(data: dict, where: str) -> tuple[bool, bool]:
    """(terminated, truncated) of a whole episode: exactly one of them true."""
    terminated, truncated = data.get("terminated"), data.get("truncated")
    if type(terminated) is not bool or type(truncated) is not bool or terminated == truncated:
        raise ProtocolError(f"{where}: send whole episodes only: exactly one of 'terminated' and "
                            f"'truncated' is true (got {terminated!r}, {truncated!r}).")
    return terminated, truncated


def episode_from_message(data: object, where: str, observation_space: gym.spaces.Box,
                         action_space: gym.Space, max_episode_steps: int) -> SingleAgentEpisode:
    """The SingleAgentEpisode in `data` (one entry of a message's "episodes", named `where` in
    errors), checked against the spaces and the length limit."""
    if not isinstance(data, dict) or set(data) != EPISODE_FIELDS:
        keys = sorted(data) if isinstance(data, dict) else type(data).__name__
        raise ProtocolError(f"{where}: an episode is an object with exactly the fields "
                            f"{sorted(EPISODE_FIELDS)}, got {keys}.")
    terminated, truncated = checked_ending(data, where)
    rewards = checked_array(data, "rewards", where, ("float32", "float64"), (None,))
    t = len(rewards)
    if not 1 <= t <= max_episode_steps:
        raise ProtocolError(f"{where}: {t} steps; an episode has 1 to {max_episode_steps} "
                            "(max_episode_steps): truncate longer ones in the simulator.")
    obs = checked_array(data, "obs", where, ("float32",), (t + 1, *observation_space.shape))
    logp = checked_array(data, "action_logp", where, ("float32",), (t,))
    if isinstance(action_space, gym.spaces.Discrete):
        actions = checked_array(data, "actions", where, ("int64",), (t,))
        bad = np.flatnonzero((actions < 0) | (actions >= action_space.n))
        if len(bad) or (logp > 1e-5).any():
            what = (f"action {int(actions[bad[0]])} at step {int(bad[0])} is outside 0..."
                    f"{action_space.n - 1}" if len(bad) else "a log-probability is above 0")
            raise ProtocolError(f"{where}: {what} (send the module's action indices and their "
                                "log-probabilities, before adding the space's start).")
    else:
        actions = checked_array(data, "actions", where, ("float32",), (t, *action_space.shape))
    return SingleAgentEpisode(obs, actions, rewards.astype(np.float32), {"action_logp": logp},
                              is_terminated=terminated, is_truncated=truncated)
