"""Episodes into training arrays: flattened chunks, and Generalized Advantage Estimation."""

import numpy as np

from rlcourse.env.single_agent_episode import SingleAgentEpisode


def flatten_episodes(episodes: list[SingleAgentEpisode]) -> dict[str, np.ndarray]:
    """Concatenate episode chunks: `all_obs` holds each chunk's n+1 observations (the last one to
    bootstrap from), `obs_index` the n with an action; `chunk_ends` and `terminateds` mark steps."""
    if not episodes:
        raise ValueError("No episodes to learn from: the EnvRunners returned nothing.")
    last = [np.arange(len(ep)) == len(ep) - 1 for ep in episodes]  # each chunk's last step
    has_action = np.concatenate([np.arange(len(ep) + 1) < len(ep) for ep in episodes])
    batch = {
        "all_obs": np.concatenate([ep.observations for ep in episodes]),
        "obs_index": np.flatnonzero(has_action),
        "actions": np.concatenate([ep.actions for ep in episodes]),
        "rewards": np.concatenate([ep.rewards for ep in episodes]),
        "terminateds": np.concatenate([is_last & ep.is_terminated
                                       for is_last, ep in zip(last, episodes, strict=True)]),
        "chunk_ends": np.concatenate(last),
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
