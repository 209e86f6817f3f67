"""Replay buffers: sum-tree sampling, importance weights, n-step rows across episode ends and chunk
cuts, eviction by capacity, and a checkpoint round trip."""

import json

import numpy as np
import pytest

from rlcourse.env.single_agent_episode import SingleAgentEpisode
from rlcourse.utils.replay_buffers import EpisodeReplayBuffer, PrioritizedEpisodeReplayBuffer
from rlcourse.utils.replay_buffers.prioritized_episode_replay_buffer import SumTree

GAMMA = 0.9


def chunk(first_obs: int, rewards: list[float], id_: str, t_started: int = 0, terminated=False,
          truncated=False) -> SingleAgentEpisode:
    """A chunk whose observation at step t is first_obs + t (so rows show where they come from)."""
    n = len(rewards)
    obs = np.arange(first_obs, first_obs + n + 1, dtype=np.float32)[:, None]
    return SingleAgentEpisode(obs, np.arange(n) % 2, np.array(rewards, np.float32), None,
                              terminated, truncated, id_=id_, t_started=t_started)


def rows_by_obs(batch: dict) -> dict[float, tuple]:
    """Each sampled row keyed by its observation: (reward, new_obs, terminated, n_step)."""
    return {float(o[0]): (float(r), float(no[0]), bool(d), int(n)) for o, r, no, d, n in zip(
        batch["obs"], batch["rewards"], batch["new_obs"], batch["terminateds"], batch["n_step"],
        strict=True)}


def test_sum_tree_samples_in_proportion_to_priority():
    tree = SumTree(5)  # 8 leaves, 3 of them never set (priority 0)
    priorities = np.array([1.0, 2.0, 3.0, 0.5, 3.5])
    tree.set(np.arange(5), priorities)
    assert tree.total == pytest.approx(10.0)
    draws = tree.sample(100_000, np.random.default_rng(0))
    frequencies = np.bincount(draws, minlength=8) / len(draws)
    assert frequencies[5:].sum() == 0  # leaves of priority 0 are never drawn
    # Binomial standard error at n=100k is <= 0.0016; 0.006 is almost 4 of them.
    np.testing.assert_allclose(frequencies[:5], priorities / 10.0, atol=0.006)
    tree.set(np.array([1]), np.array([0.0]))  # recomputed sums: slot 1 can no longer be drawn
    assert tree.total == pytest.approx(8.0)
    assert 1 not in tree.sample(10_000, np.random.default_rng(1))


def test_sum_tree_find_uses_cumulative_ranges():
    tree = SumTree(4)
    tree.set(np.arange(4), np.array([1.0, 0.0, 2.0, 1.0]))
    # cumulative: [0, 1) -> 0, [1, 3) -> 2 (slot 1 is empty), [3, 4) -> 3
    assert tree.find(np.array([0.0, 0.99, 1.0, 2.99, 3.0, 3.999])).tolist() == [0, 0, 2, 2, 3, 3]


def test_n_step_rows_across_termination_truncation_and_a_chunk_cut():
    buffer = EpisodeReplayBuffer(capacity=100, seed=0)
    buffer.add([chunk(0, [1, 2], "a"),                                   # a: cut after 2 steps,
                chunk(100, [1, 1, 1, 1], "b", truncated=True)])          # b: truncated at 4
    buffer.add([chunk(2, [3, 4], "a", t_started=2, terminated=True),     # a continues, terminates
                chunk(200, [5, 6], "c")])                                # c: ongoing, 2 steps so far
    assert buffer.get_num_episodes() == 3 and len(buffer) == 10
    rows = rows_by_obs(buffer.sample(2000, n_step=3, gamma=GAMMA))
    assert len(rows) == 10  # every stored step was drawn
    g = GAMMA
    expected = {
        0: (1 + 2 * g + 3 * g**2, 3, False, 3),   # across the cut between a's two chunks
        1: (2 + 3 * g + 4 * g**2, 4, True, 3),    # reaches a's termination: no bootstrap
        2: (3 + 4 * g, 4, True, 2),               # shorter at the end: 2 steps, terminated
        3: (4, 4, True, 1),
        100: (1 + g + g**2, 103, False, 3),
        102: (1 + g, 104, False, 2),              # reaches b's truncation: bootstrap from obs 104
        103: (1, 104, False, 1),
        200: (5 + 6 * g, 202, False, 2),          # c's newest stored step: bootstrap from it
        201: (6, 202, False, 1),
    }
    for obs, (reward, new_obs, terminated, n) in expected.items():
        assert rows[obs][0] == pytest.approx(reward, rel=1e-6), obs
        assert rows[obs][1:] == (new_obs, terminated, n), obs


def test_eviction_removes_the_oldest_whole_episodes_and_frees_their_slots():
    buffer = EpisodeReplayBuffer(capacity=10, seed=0)
    buffer.add([chunk(0, [1] * 4, "old", terminated=True), chunk(10, [1] * 4, "mid")])
    assert len(buffer) == 8
    buffer.add([chunk(20, [1] * 3, "new")])  # 11 > 10: "old" goes, whole
    assert list(buffer.episodes) == ["mid", "new"] and len(buffer) == 7
    assert buffer.num_episodes_evicted_lifetime == 1
    buffer.add([chunk(14, [1] * 3, "mid", t_started=4)])  # continues "mid": still 10, no eviction
    assert list(buffer.episodes) == ["mid", "new"] and len(buffer) == 10
    assert len(buffer.episodes["mid"]) == 7
    observations = buffer.sample(500, n_step=1)["obs"][:, 0]
    assert set(observations.tolist()) == {*range(10, 17), *range(20, 23)}
    with pytest.raises(ValueError, match="capacity 10"):
        buffer.add([chunk(50, [1] * 11, "too_long")])


def test_importance_weights_match_a_hand_computation():
    alpha, beta = 0.5, 0.4
    buffer = PrioritizedEpisodeReplayBuffer(capacity=8, alpha=alpha, beta=beta, seed=0)
    buffer.add([chunk(0, [0, 0, 0, 0], "a", terminated=True)])
    batch = buffer.sample(4)
    assert np.allclose(batch["weights"], 1.0)  # equal (maximal) priorities: no correction
    td_errors = np.array([1.0, 4.0, 0.25, 9.0])
    slots = np.array([int(np.flatnonzero(buffer._slot_t == t)[0]) for t in range(4)])
    buffer.update_priorities(slots, td_errors)
    p = (td_errors + 1e-6) ** alpha  # stored priorities p_i^alpha
    probabilities = p / p.sum()
    weights = (4 * probabilities) ** -beta
    weights /= weights.max()  # the largest weight: that of the least likely step
    batch = buffer.sample(400)
    for obs, weight in zip(batch["obs"][:, 0], batch["weights"], strict=True):
        assert weight == pytest.approx(weights[int(obs)], rel=1e-5)
    counts = np.bincount(batch["obs"][:, 0].astype(int), minlength=4) / 400
    np.testing.assert_allclose(counts, probabilities, atol=0.07)
    assert buffer.max_priority == pytest.approx(9.0 + 1e-6)


def test_new_steps_get_the_largest_priority_seen():
    buffer = PrioritizedEpisodeReplayBuffer(capacity=8, alpha=1.0, seed=0)
    buffer.add([chunk(0, [0, 0], "a")])
    buffer.update_priorities(np.array([0, 1]), np.array([3.0, 0.5]))
    buffer.add([chunk(2, [0], "a", t_started=2)])
    new_slot = int(np.flatnonzero(buffer._slot_t == 2)[0])
    assert buffer.tree.leaves[new_slot] == pytest.approx(3.0 + 1e-6)


@pytest.mark.parametrize("buffer_class", [EpisodeReplayBuffer, PrioritizedEpisodeReplayBuffer])
def test_state_round_trip_samples_the_same(buffer_class):
    buffer = buffer_class(capacity=20, seed=3)
    buffer.add([chunk(0, [1, 2, 3], "a"), chunk(10, [4, 5], "b", terminated=True)])
    buffer.add([chunk(3, [6], "a", t_started=3)])
    buffer.update_priorities(np.array([0, 1]), np.array([2.0, 0.1]))
    restored = buffer_class(capacity=20)
    restored.set_state(json.loads(json.dumps(buffer.get_state())))  # plain data, as saved
    for key in ("obs", "rewards", "indices", "weights"):
        np.testing.assert_array_equal(restored.sample(16, n_step=2)[key],
                                      buffer.sample(16, n_step=2)[key])
