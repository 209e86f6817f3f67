import numpy as np


def my_vtrace(behaviour_logp, target_logp, rewards, values, bootstrap_value, terminated, gamma,
              rho_bar=1.0, c_bar=1.0):
    """V-trace targets v_s for one fragment of T steps; `bootstrap_value` is V(s_T)."""
    ratios = np.exp(target_logp - behaviour_logp)  # pi(a_t | s_t) / mu(a_t | s_t)
    rho, c = np.minimum(rho_bar, ratios), np.minimum(c_bar, ratios)
    vs = np.zeros(len(rewards))
    next_value, next_correction = bootstrap_value, 0.0  # V(s_{t+1}) and v_{t+1} - V(s_{t+1})
    for t in reversed(range(len(rewards))):
        discount = 0.0 if (terminated and t == len(rewards) - 1) else gamma
        delta = rho[t] * (rewards[t] + discount * next_value - values[t])
        next_correction = delta + discount * c[t] * next_correction
        vs[t] = values[t] + next_correction
        next_value = values[t]
    return vs
