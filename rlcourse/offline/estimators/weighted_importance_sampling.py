"""Per-decision weighted importance sampling (Precup et al. 2000; RLlib's WeightedImportanceSampling):
the return a target policy pi_e would get, estimated from episodes that a behaviour policy pi_b
recorded with their `action_logp`, log pi_b(a_t|s_t).

    p_t = prod_{t' <= t} pi_e(a_t'|s_t') / pi_b(a_t'|s_t')     (each episode's cumulative ratio)
    w_t = the mean of p_t over all episodes
    V(pi_e) ~ mean over episodes of sum_t gamma^t (p_t / w_t) r_t

An episode that ended keeps its last p_t with reward 0 (an absorbing state), so w_t counts it and
how long pi_e's episodes last is in the estimate. RLlib averages p_t over the episodes that reach
step t only, which on CartPole estimates every pi_e at the behaviour's return
(tests/test_off_policy_estimation.py shows it). Steps no recorded episode reaches, or where pi_e
would have taken none of the episodes (every p_t = 0), count as 0.
"""

import numpy as np

from rlcourse.offline.columns import ACTION_LOGP, EPS_ID, REWARDS


def weighted_importance_sampling(rows: dict[str, np.ndarray], target_logp: np.ndarray,
                                 gamma: float) -> dict[str, float]:
    """`rows`: recorded steps in RLlib's columns (`eps_id`, `rewards`, `action_logp`), each
    episode's rows in order; `target_logp`: log pi_e(a_t|s_t) of the same rows' actions. Returns
    the mean discounted return recorded (`v_behavior`), the estimate for pi_e (`v_target`) and
    their ratio (`v_gain`), as RLlib's estimator names them."""
    if missing := [name for name in (EPS_ID, REWARDS, ACTION_LOGP) if name not in rows]:
        raise ValueError(f"weighted_importance_sampling needs the column {missing[0]!r}; record "
                         "with config.offline_data(output=...), which writes action_logp.")
    if len(target_logp) != len(rows[REWARDS]):
        raise ValueError(f"target_logp has {len(target_logp)} values for {len(rows[REWARDS])} rows: "
                         "give log pi_e(a|s) of every row's recorded action.")
    eps_id = np.asarray(rows[EPS_ID])
    starts = np.flatnonzero(np.r_[True, eps_id[1:] != eps_id[:-1]])
    episodes = np.split(np.arange(len(eps_id)), starts[1:])
    if len({eps_id[s] for s in starts}) != len(starts):
        raise ValueError("An episode's rows are not together (an eps_id appears in two places): "
                         "keep each episode's rows in order, as recorded.")
    log_ratios = np.asarray(target_logp, np.float64) - rows[ACTION_LOGP]
    horizon = max(map(len, episodes))
    # [episode, step]: rewards 0 after an episode's end, where its ratio stays at its last value
    # (the episode sits in an absorbing state, whose actions pi_e and pi_b take alike).
    rewards, log_p = np.zeros((len(episodes), horizon)), np.zeros((len(episodes), horizon))
    for i, steps in enumerate(episodes):
        rewards[i, :len(steps)] = rows[REWARDS][steps]
        log_p[i, :len(steps)] = np.cumsum(log_ratios[steps])
        log_p[i, len(steps):] = log_p[i, len(steps) - 1]
    top = log_p.max(axis=0)  # -inf at a step where pi_e takes no episode's actions so far
    p = np.exp(log_p - np.where(top > -np.inf, top, 0.0))  # p_t, scaled per step (w_t cancels it)
    w = p.mean(axis=0)
    discounts = gamma ** np.arange(horizon)
    v_behavior = np.mean(rewards @ discounts)
    ratio = np.divide(p, w, out=np.zeros_like(p), where=w > 0)  # 0 where w_t = 0: no data on pi_e
    v_target = np.mean((ratio * rewards) @ discounts)
    return {"v_behavior": float(v_behavior), "v_target": float(v_target),
            "v_gain": float(v_target / v_behavior) if v_behavior else float("nan")}
