"""V-trace (Espeholt et al. 2018, IMPALA): value targets for data of the runners' older policy mu,
from the learner's policy pi, with clipped importance ratios pi/mu:

    delta_t = rho_t * (r_t + gamma * V(x_{t+1}) - V(x_t))           rho_t = min(rho_bar, pi/mu)
    v_t     = V(x_t) + delta_t + gamma * c_t * (v_{t+1} - V(x_{t+1}))    c_t = min(c_bar, pi/mu)

computed backwards within each chunk; at a chunk's end v_{t+1} = V(x_{t+1}) (the bootstrap), and
after a termination the discount is 0. The policy gradient uses rho^pg_t * (r_t + gamma * v_{t+1} -
V(x_t)).
"""

import numpy as np


def vtrace(behaviour_logp: np.ndarray, target_logp: np.ndarray, rewards: np.ndarray,
           values: np.ndarray, next_values: np.ndarray, terminateds: np.ndarray,
           chunk_ends: np.ndarray, gamma: float, clip_rho_threshold: float = 1.0,
           clip_pg_rho_threshold: float = 1.0, clip_c_threshold: float = 1.0
           ) -> tuple[np.ndarray, np.ndarray]:
    """V-trace targets `vs` and policy-gradient advantages for concatenated chunks, flat over steps:
    `next_values[t]` is V(x_{t+1}) and `chunk_ends[t]` marks a chunk's last step."""
    ratios = np.exp(target_logp - behaviour_logp)
    rhos = np.minimum(clip_rho_threshold, ratios)
    cs = np.minimum(clip_c_threshold, ratios)
    discounts = gamma * (1.0 - terminateds.astype(np.float64))
    deltas = rhos * (rewards + discounts * next_values - values)

    vs_minus_v = np.zeros(len(rewards))
    carry = 0.0  # (v_{t+1} - V(x_{t+1})), zero past a chunk's end
    for t in range(len(rewards) - 1, -1, -1):
        if chunk_ends[t]:
            carry = 0.0
        carry = deltas[t] + discounts[t] * cs[t] * carry
        vs_minus_v[t] = carry
    vs = values + vs_minus_v

    # v_{t+1}: the next step's target inside a chunk, the bootstrap value at its end.
    next_vs = np.where(chunk_ends, next_values, np.roll(vs, -1))
    pg_rhos = np.minimum(clip_pg_rho_threshold, ratios)
    pg_advantages = pg_rhos * (rewards + discounts * next_vs - values)
    return vs, pg_advantages
