"""Turning episodes into training arrays: flattening chunks, and Generalized Advantage Estimation."""

import numpy as np

from rlcourse.env.single_agent_episode import SingleAgentEpisode


def flatten_episodes(episodes: list[SingleAgentEpisode]) -> dict[str, np.ndarray]:
    """Concatenate episode chunks into flat arrays.

    `all_obs` holds every chunk's n+1 observations (so values can be computed for the bootstrap
    observation too); `obs_index` picks the n observations that have an action. `chunk_ends` marks a
    chunk's last step, `terminateds` a last step that ended the episode (no bootstrap after it).
    """
    if not episodes:
        raise ValueError("No episodes to learn from: the EnvRunners returned nothing.")
    all_obs = np.concatenate([ep.observations for ep in episodes])
    lens = np.array([len(ep) for ep in episodes])
    starts = np.concatenate([[0], np.cumsum(lens + 1)[:-1]])
    obs_index = np.concatenate([start + np.arange(n) for start, n in zip(starts, lens, strict=True)])
    ends = np.cumsum(lens) - 1  # index of each chunk's last step in the flat step arrays
    chunk_ends = np.zeros(lens.sum(), dtype=bool)
    chunk_ends[ends[lens > 0]] = True
    terminateds = np.zeros(lens.sum(), dtype=bool)
    terminated = np.array([ep.is_terminated for ep in episodes]) & (lens > 0)
    terminateds[ends[terminated]] = True
    batch = {
        "all_obs": all_obs,
        "obs_index": obs_index,
        "actions": np.concatenate([ep.actions for ep in episodes]),
        "rewards": np.concatenate([ep.rewards for ep in episodes]),
        "terminateds": terminateds,
        "chunk_ends": chunk_ends,
    }
    for key in episodes[0].extra_model_outputs:
        batch[key] = np.concatenate([ep.extra_model_outputs[key] for ep in episodes])
    return batch


def compute_gae(rewards: np.ndarray, values: np.ndarray, next_values: np.ndarray,
                terminateds: np.ndarray, chunk_ends: np.ndarray, gamma: float, lambda_: float
                ) -> tuple[np.ndarray, np.ndarray]:
    """Generalized Advantage Estimation (Schulman et al. 2016) over concatenated chunks.

    delta_t = r_t + gamma * V(s_{t+1}) * (1 - terminated_t) - V(s_t)
    A_t     = delta_t + gamma * lambda * A_{t+1}, restarted at each chunk's end.
    Returns (advantages, value_targets = advantages + values).
    """
    not_terminated = 1.0 - terminateds.astype(np.float32)
    deltas = rewards + gamma * next_values * not_terminated - values
    carry = gamma * lambda_ * (1.0 - chunk_ends.astype(np.float32))
    advantages = np.zeros_like(deltas)
    last = 0.0
    for t in range(len(deltas) - 1, -1, -1):
        last = deltas[t] + carry[t] * last
        advantages[t] = last
    return advantages, advantages + values
