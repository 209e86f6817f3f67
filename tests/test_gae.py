"""GAE against hand computations, and flatten_episodes on hand-built chunks.

All hand computations use gamma = 0.9, lambda = 0.8 (so gamma * lambda = 0.72) and

    delta_t = r_t + gamma * V(s_{t+1}) * (1 - terminated_t) - V(s_t)
    A_t     = delta_t + gamma * lambda * A_{t+1}      (A after a chunk's last step is 0)
"""

import numpy as np
import pytest

from rlcourse.env.single_agent_episode import SingleAgentEpisode
from rlcourse.utils.postprocessing import compute_gae, flatten_episodes

GAMMA, LAMBDA = 0.9, 0.8

# One 3-step chunk: rewards 1, 2, 3; V(s_0..s_2) = 0.5, 1.0, 1.5; V(s_1), V(s_2) = 1.0, 1.5.
REWARDS = np.array([1.0, 2.0, 3.0])
VALUES = np.array([0.5, 1.0, 1.5])
# delta_0 = 1 + 0.9 * 1.0 - 0.5 = 1.4     delta_1 = 2 + 0.9 * 1.5 - 1.0 = 2.35


def gae(rewards, values, next_values, terminateds, chunk_ends, gamma=GAMMA, lambda_=LAMBDA):
    return compute_gae(np.asarray(rewards, dtype=np.float64), np.asarray(values, dtype=np.float64),
                       np.asarray(next_values, dtype=np.float64), np.asarray(terminateds, dtype=bool),
                       np.asarray(chunk_ends, dtype=bool), gamma, lambda_)


def test_terminated_chunk_does_not_bootstrap():
    # The last next-value (99) must be ignored: the episode ended, nothing follows.
    # delta_2 = 3 - 1.5 = 1.5
    # A_2 = 1.5;  A_1 = 2.35 + 0.72 * 1.5 = 3.43;  A_0 = 1.4 + 0.72 * 3.43 = 3.8696
    adv, targets = gae(REWARDS, VALUES, [1.0, 1.5, 99.0], [False, False, True], [False, False, True])
    np.testing.assert_allclose(adv, [3.8696, 3.43, 1.5], rtol=1e-6)
    np.testing.assert_allclose(targets, adv + VALUES, rtol=1e-6)


def test_truncated_chunk_bootstraps_from_the_final_observation():
    # Truncated: not terminated, so V(final obs) = 2.0 counts.
    # delta_2 = 3 + 0.9 * 2.0 - 1.5 = 3.3
    # A_2 = 3.3;  A_1 = 2.35 + 0.72 * 3.3 = 4.726;  A_0 = 1.4 + 0.72 * 4.726 = 4.80272
    adv, targets = gae(REWARDS, VALUES, [1.0, 1.5, 2.0], [False, False, False], [False, False, True])
    np.testing.assert_allclose(adv, [4.80272, 4.726, 3.3], rtol=1e-6)
    np.testing.assert_allclose(targets, [5.30272, 5.726, 4.8], rtol=1e-6)


def test_ongoing_chunk_bootstraps_from_its_last_observation():
    # Ongoing, V(last obs) = -1.0.
    # delta_2 = 3 + 0.9 * (-1.0) - 1.5 = 0.6
    # A_2 = 0.6;  A_1 = 2.35 + 0.72 * 0.6 = 2.782;  A_0 = 1.4 + 0.72 * 2.782 = 3.40304
    adv, _ = gae(REWARDS, VALUES, [1.0, 1.5, -1.0], [False, False, False], [False, False, True])
    np.testing.assert_allclose(adv, [3.40304, 2.782, 0.6], rtol=1e-6)


# Two chunks back to back: A (ongoing, 2 steps, bootstrap V = 4.0) then B (terminated, 2 steps).
TWO_CHUNKS = dict(rewards=[1.0, 2.0, 3.0, 4.0], values=[0.5, 1.0, 10.0, 20.0],
                  next_values=[1.0, 4.0, 20.0, 0.0], terminateds=[False, False, False, True],
                  chunk_ends=[False, True, False, True])
# A: delta = 1 + 0.9 * 1.0 - 0.5 = 1.4,  2 + 0.9 * 4.0 - 1.0 = 4.6
# B: delta = 3 + 0.9 * 20 - 10 = 11,     4 - 20 = -16
# B: A_3 = -16;  A_2 = 11 + 0.72 * (-16) = -0.52
# A: A_1 = 4.6 (restarts: B's advantages must not leak in);  A_0 = 1.4 + 0.72 * 4.6 = 4.712
TWO_CHUNKS_ADVANTAGES = [4.712, 4.6, -0.52, -16.0]


def test_recursion_restarts_at_each_chunk_end():
    adv, targets = gae(**TWO_CHUNKS)
    np.testing.assert_allclose(adv, TWO_CHUNKS_ADVANTAGES, rtol=1e-6)
    np.testing.assert_allclose(targets, [5.212, 5.6, 9.48, 4.0], rtol=1e-6)


def test_gae_from_flattened_episodes_as_the_learner_computes_it():
    """The learner's path: V over all_obs, next values at obs_index + 1. Here V(obs) = obs."""
    chunk_a = SingleAgentEpisode(np.array([[0.5], [1.0], [4.0]]), np.array([0, 1]),
                                 np.array([1.0, 2.0]))
    chunk_b = SingleAgentEpisode(np.array([[10.0], [20.0], [99.0]]), np.array([1, 0]),
                                 np.array([3.0, 4.0]), is_terminated=True)
    flat = flatten_episodes([chunk_a, chunk_b])
    all_values = flat["all_obs"][:, 0]
    index = flat["obs_index"]
    adv, _ = compute_gae(flat["rewards"], all_values[index], all_values[index + 1],
                         flat["terminateds"], flat["chunk_ends"], GAMMA, LAMBDA)
    np.testing.assert_allclose(adv, TWO_CHUNKS_ADVANTAGES, rtol=1e-5)


def random_chunks(rng, lens, terminated):
    """Random rewards and values for chunks of the given lengths; `terminated[i]` ends chunk i.

    As in a real batch, next_values[t] = values[t + 1] inside a chunk; at a chunk's end it is the
    value of the chunk's last observation (the bootstrap).
    """
    n = sum(lens)
    ends = np.cumsum(lens) - 1
    chunk_ends = np.zeros(n, dtype=bool)
    chunk_ends[ends] = True
    terminateds = np.zeros(n, dtype=bool)
    terminateds[ends[np.asarray(terminated)]] = True
    values = rng.normal(size=n)
    next_values = np.where(chunk_ends, rng.normal(size=n), np.roll(values, -1))
    return rng.normal(size=n), values, next_values, terminateds, chunk_ends


def test_gamma_1_lambda_1_is_the_monte_carlo_return_minus_the_value():
    rng = np.random.default_rng(0)
    rewards, values, next_values, terminateds, chunk_ends = random_chunks(
        rng, [4, 3, 5], [True, False, True])
    adv, targets = gae(rewards, values, next_values, terminateds, chunk_ends, gamma=1.0, lambda_=1.0)
    expected = np.empty_like(rewards)
    start = 0
    for end in np.flatnonzero(chunk_ends):
        chunk = slice(start, end + 1)
        bootstrap = 0.0 if terminateds[end] else next_values[end]
        reward_to_go = np.cumsum(rewards[chunk][::-1])[::-1] + bootstrap
        expected[chunk] = reward_to_go - values[chunk]
        start = end + 1
    np.testing.assert_allclose(adv, expected, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(targets, expected + values, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("gamma", [0.0, 0.5, 0.99])
def test_lambda_0_is_the_one_step_td_error(gamma):
    rng = np.random.default_rng(1)
    rewards, values, next_values, terminateds, chunk_ends = random_chunks(
        rng, [3, 1, 4], [False, True, False])
    adv, targets = gae(rewards, values, next_values, terminateds, chunk_ends, gamma=gamma, lambda_=0.0)
    td_error = rewards + gamma * next_values * ~terminateds - values
    np.testing.assert_allclose(adv, td_error, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(targets, rewards + gamma * next_values * ~terminateds, rtol=1e-6,
                               atol=1e-9)


# -- flatten_episodes ------------------------------------------------------------------------

def chunk(first_obs, n, *, terminated=False, truncated=False, id_=None, t_started=0):
    """n steps; observation t is [first_obs + t], action t is first_obs + t, reward -(first_obs + t)."""
    steps = first_obs + np.arange(n)
    return SingleAgentEpisode(np.arange(first_obs, first_obs + n + 1, dtype=np.float32)[:, None],
                              steps, -steps.astype(np.float32),
                              {"action_logp": steps / 100.0},
                              is_terminated=terminated, is_truncated=truncated, id_=id_,
                              t_started=t_started)


def test_flatten_episodes_indexes_observations_and_marks_chunk_ends():
    episodes = [chunk(0, 2, terminated=True),   # all_obs 0 1 2
                chunk(10, 3),                   # all_obs 10 11 12 13 (ongoing)
                chunk(20, 1, truncated=True)]   # all_obs 20 21
    flat = flatten_episodes(episodes)
    np.testing.assert_array_equal(flat["all_obs"][:, 0], [0, 1, 2, 10, 11, 12, 13, 20, 21])
    np.testing.assert_array_equal(flat["obs_index"], [0, 1, 3, 4, 5, 7])
    np.testing.assert_array_equal(flat["all_obs"][flat["obs_index"], 0], [0, 1, 10, 11, 12, 20])
    np.testing.assert_array_equal(flat["all_obs"][flat["obs_index"] + 1, 0], [1, 2, 11, 12, 13, 21])
    np.testing.assert_array_equal(flat["chunk_ends"], [False, True, False, False, True, True])
    # Only the terminated chunk's last step stops the bootstrap; truncated and ongoing do not.
    np.testing.assert_array_equal(flat["terminateds"], [False, True, False, False, False, False])
    np.testing.assert_array_equal(flat["actions"], [0, 1, 10, 11, 12, 20])
    np.testing.assert_array_equal(flat["rewards"], [0, -1, -10, -11, -12, -20])
    np.testing.assert_allclose(flat["action_logp"], [0, 0.01, 0.1, 0.11, 0.12, 0.2])


def test_flatten_episodes_with_an_empty_chunk():
    """A 0-step chunk (what cut() makes) adds its one observation but no step and no chunk end."""
    first = chunk(0, 2)
    episodes = [chunk(5, 2, terminated=True), first.cut(), chunk(30, 1)]
    flat = flatten_episodes(episodes)
    np.testing.assert_array_equal(flat["all_obs"][:, 0], [5, 6, 7, 2, 30, 31])
    np.testing.assert_array_equal(flat["obs_index"], [0, 1, 4])
    np.testing.assert_array_equal(flat["chunk_ends"], [False, True, True])
    np.testing.assert_array_equal(flat["terminateds"], [False, True, False])
    assert len(flat["rewards"]) == len(flat["actions"]) == len(flat["action_logp"]) == 3


def test_flatten_episodes_refuses_an_empty_list():
    with pytest.raises(ValueError, match="No episodes"):
        flatten_episodes([])
