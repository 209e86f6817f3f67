"""Weighted importance sampling (rlcourse/offline/estimators/): RLlib's step-wise formula on a hand
example; the behaviour policy's own estimate is its recorded return; a different policy's estimate
is near its true return."""

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from rlcourse.offline.estimators import weighted_importance_sampling
from rlcourse.offline.offline_data import table_to_numpy

EXPERT_DATA = Path(__file__).parent / "fixtures" / "cartpole_ppo_expert"


def test_the_formula_on_two_episodes_by_hand():
    rows = {"eps_id": np.array(["a", "a", "b"]), "rewards": np.array([1.0, 2.0, 4.0]),
            "action_logp": np.log([0.5, 0.5, 0.25])}
    target = np.log([1.0, 0.25, 0.5])
    # p: episode a 2, then 2 * 0.5 = 1; episode b 2, and 2 after its end (reward 0 there).
    # w_0 = (2 + 2) / 2 = 2, w_1 = (1 + 2) / 2 = 1.5.
    v_target = ((2 / 2 * 1 + 0.9 * 1 / 1.5 * 2) + (2 / 2 * 4)) / 2
    estimate = weighted_importance_sampling(rows, target, gamma=0.9)
    assert estimate["v_target"] == pytest.approx(v_target)
    assert estimate["v_behavior"] == pytest.approx(((1 + 0.9 * 2) + 4) / 2)


def test_a_step_where_the_target_takes_no_recorded_action_counts_as_0():
    """A deterministic pi_e (log 0 = -inf) that leaves every episode at step 1: the estimate is
    step 0's alone (it was NaN for every step)."""
    rows = {"eps_id": np.array(["a", "a", "b", "b"]), "rewards": np.array([1.0, 2.0, 4.0, 8.0]),
            "action_logp": np.log([0.5, 0.5, 0.25, 0.5])}
    estimate = weighted_importance_sampling(rows, np.array([0.0, -np.inf, 0.0, -np.inf]), gamma=0.9)
    # p_0: 2 and 4, w_0 = 3, so ((2 / 3) * 1 + (4 / 3) * 4) / 2; p_1 = 0 for both.
    assert estimate["v_target"] == pytest.approx((2 / 3 * 1 + 4 / 3 * 4) / 2)


def test_the_behaviour_policy_is_estimated_at_its_recorded_return():
    rows = table_to_numpy(pq.read_table(next(EXPERT_DATA.rglob("*.parquet"))))
    estimate = weighted_importance_sampling(rows, rows["action_logp"], gamma=0.99)
    ends = np.flatnonzero(np.r_[rows["eps_id"][1:] != rows["eps_id"][:-1], True])
    returns = [np.sum(0.99 ** np.arange(len(r)) * r) for r in np.split(rows["rewards"], ends[:-1] + 1)]
    assert estimate["v_target"] == pytest.approx(estimate["v_behavior"])
    assert estimate["v_behavior"] == pytest.approx(np.mean(returns)) and estimate["v_gain"] == 1


def test_another_policys_estimate_is_near_its_true_return():
    """Reward 1 per step; action 0 ends the episode, and 10 steps do. A coin recorded the episodes;
    a policy taking action 1 with probability 0.8 lasts longer: its true return is
    sum_{t<10} gamma^t 0.8^t. Averaging p_t only over the episodes that reach step t (as RLlib
    does) would estimate it at the coin's return."""
    rng = np.random.default_rng(0)
    episodes, steps, gamma = 4000, 10, 0.9
    actions = [(rng.random(steps) < 0.5).astype(int) for _ in range(episodes)]
    actions = [a if a.all() else a[:np.argmin(a) + 1] for a in actions]  # to the first 0
    rows = {"eps_id": np.repeat(np.arange(episodes), [len(a) for a in actions]),
            "rewards": np.ones(sum(map(len, actions))), "action_logp": np.log(np.full(
                sum(map(len, actions)), 0.5))}
    actions = np.concatenate(actions)
    estimate = weighted_importance_sampling(rows, np.log(np.where(actions == 1, 0.8, 0.2)), gamma)
    true_return = np.sum((gamma * 0.8) ** np.arange(steps))
    assert estimate["v_target"] == pytest.approx(true_return, rel=0.05)
    assert estimate["v_behavior"] == pytest.approx(np.sum((gamma * 0.5) ** np.arange(steps)),
                                                   rel=0.05)
    never_one = weighted_importance_sampling(rows, np.log(np.where(actions == 1, 1e-300, 1.0)), gamma)
    assert never_one["v_target"] == pytest.approx(1.0)  # one step, then action 0 ends it


def test_missing_columns_and_split_episodes_are_named():
    rows = {"eps_id": np.array(["a", "b", "a"]), "rewards": np.ones(3)}
    with pytest.raises(ValueError, match="'action_logp'.*offline_data"):
        weighted_importance_sampling(rows, np.zeros(3), 0.99)
    with pytest.raises(ValueError, match="eps_id appears in two places"):
        weighted_importance_sampling({**rows, "action_logp": np.zeros(3)}, np.zeros(3), 0.99)
    with pytest.raises(ValueError, match="target_logp has 2 values for 3 rows"):
        weighted_importance_sampling({**rows, "action_logp": np.zeros(3)}, np.zeros(2), 0.99)
