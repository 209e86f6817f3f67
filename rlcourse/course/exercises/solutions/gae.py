import numpy as np


def my_gae(episode, values, gamma, lambda_):
    """GAE advantages A_0 ... A_{n-1} for one chunk; `values` are V(s_0) ... V(s_n)."""
    n = len(episode)
    advantages = np.zeros(n, dtype=np.float32)
    next_advantage = 0.0
    for t in reversed(range(n)):
        # Only a termination ends the future; a truncated or cut chunk bootstraps from V(s_n).
        no_future = t == n - 1 and episode.is_terminated
        next_value = 0.0 if no_future else values[t + 1]
        delta = episode.rewards[t] + gamma * next_value - values[t]
        next_advantage = delta + gamma * lambda_ * next_advantage
        advantages[t] = next_advantage
    return advantages
