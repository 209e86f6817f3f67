import numpy as np


def my_wis(rewards, behavior_logp, target_logp, gamma):
    """Per-decision weighted importance sampling of pi_e's return from episodes pi_b recorded."""
    horizon = max(len(r) for r in rewards)
    r = np.zeros((len(rewards), horizon))  # [episode, step]; 0 after an episode's end
    p = np.zeros((len(rewards), horizon))
    for i, (rew, b, t) in enumerate(zip(rewards, behavior_logp, target_logp, strict=True)):
        n = len(rew)
        r[i, :n] = rew
        p[i, :n] = np.exp(np.cumsum(t - b))  # p_t: the product of pi_e / pi_b up to step t
        p[i, n:] = p[i, n - 1]  # an ended episode keeps its last ratio (and earns 0)
    w = p.mean(axis=0)  # w_t: over all episodes
    discounts = gamma ** np.arange(horizon)
    return float(np.mean((p / w * r) @ discounts))
