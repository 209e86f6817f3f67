"""Replay buffers refuse misuse at the call that makes it, leaving the buffer as it was: TD errors
that are not finite, indices that are not stored steps, n_step or num_items < 1, exponents below 0,
a chunk that does not continue its stored episode, a saved state that is not whole and consistent."""

import numpy as np
import pytest

from rlcourse.env.single_agent_episode import SingleAgentEpisode
from rlcourse.utils.checkpoints import CheckpointError
from rlcourse.utils.replay_buffers import EpisodeReplayBuffer, PrioritizedEpisodeReplayBuffer
from rlcourse.utils.serialization import to_plain


def episode(id_: str, steps: int, terminated: bool = True, t_started: int = 0):
    """`steps` steps from observation t_started on: a chunk with t_started > 0 continues one."""
    obs = np.arange(t_started, t_started + steps + 1, dtype=np.float32)[:, None]
    return SingleAgentEpisode(obs, np.zeros(steps, dtype=np.int64), np.ones(steps, np.float32),
                              None, terminated, False, id_=id_, t_started=t_started)


def filled(buffer_class=PrioritizedEpisodeReplayBuffer, capacity: int = 8):
    buffer = buffer_class(capacity=capacity, seed=0)
    buffer.add([episode("a", 4)])
    return buffer  # slots 0-3 hold steps, 4-7 are free


@pytest.mark.parametrize("td_errors, match", [
    ([1.0, np.nan], "NaN or infinite"),
    ([np.inf, 1.0], "NaN or infinite"),
    ([1.0], "one TD error per sampled index"),
])
def test_update_priorities_refuses_bad_td_errors(td_errors, match):
    buffer = filled()
    before = buffer.tree.tree.copy()
    with pytest.raises(ValueError, match=match):
        buffer.update_priorities(np.array([0, 1]), np.array(td_errors))
    np.testing.assert_array_equal(buffer.tree.tree, before)
    assert np.isfinite(buffer.tree.total)


@pytest.mark.parametrize("index", [-1, 5, 8, 100])
def test_update_priorities_refuses_indices_that_are_not_stored_steps(index):
    buffer = filled()
    before = buffer.tree.tree.copy()
    with pytest.raises(ValueError, match=f"index {index} is not a stored step"):
        buffer.update_priorities(np.array([0, index]), np.array([1.0, 2.0]))
    np.testing.assert_array_equal(buffer.tree.tree, before)
    buffer.update_priorities(np.array([0, 3]), np.array([1.0, 2.0]))  # stored steps are fine
    assert buffer.sample(4)["indices"].max() <= 3


@pytest.mark.parametrize("buffer_class", [EpisodeReplayBuffer, PrioritizedEpisodeReplayBuffer])
@pytest.mark.parametrize("n_step", [0, -1, 1.5])
def test_sample_refuses_n_step_below_one(buffer_class, n_step):
    with pytest.raises(ValueError, match=r"n_step.*int >= 1"):
        filled(buffer_class).sample(4, n_step=n_step)


@pytest.mark.parametrize("buffer_class", [EpisodeReplayBuffer, PrioritizedEpisodeReplayBuffer])
@pytest.mark.parametrize("num_items", [0, -2, 2.5])
def test_sample_refuses_num_items_below_one(buffer_class, num_items):
    with pytest.raises(ValueError, match=rf"num_items={num_items}.*int >= 1"):
        filled(buffer_class).sample(num_items)


@pytest.mark.parametrize("buffer_class", [EpisodeReplayBuffer, PrioritizedEpisodeReplayBuffer])
def test_update_priorities_with_nothing_to_update_changes_nothing(buffer_class):
    buffer = filled(buffer_class)
    state = buffer.get_state()
    buffer.update_priorities(np.array([]), np.array([]))
    buffer.update_priorities([], [])
    assert buffer.get_state() == state


@pytest.mark.parametrize("buffer_class", [EpisodeReplayBuffer, PrioritizedEpisodeReplayBuffer])
@pytest.mark.parametrize("again", [
    episode("b", 3, terminated=False),  # "b"'s chunk added twice
    episode("a", 2, t_started=5),       # a chunk after "a" terminated
])
def test_add_refuses_a_chunk_that_does_not_continue_its_episode_and_changes_nothing(
        buffer_class, again):
    buffer = buffer_class(capacity=10, seed=0)
    buffer.add([episode("a", 5), episode("b", 3, terminated=False)])  # 8 of 10 slots used
    state = buffer.get_state()
    # Room for `again` would evict "a": the refusal must come before that and before taking slots.
    with pytest.raises(ValueError, match=r"does not continue.*Add each chunk once"):
        buffer.add([again])
    assert buffer.get_state() == state and len(buffer) == 8
    assert sum(map(len, buffer.episodes.values())) == 8 and list(buffer.episodes) == ["a", "b"]
    restored = buffer_class(capacity=10)
    restored.set_state(state)
    np.testing.assert_array_equal(buffer.sample(16)["indices"], restored.sample(16)["indices"])
    buffer.add([episode("b", 2, terminated=False, t_started=3)])  # the real next chunk still joins
    assert len(buffer.episodes["b"]) == 5 and len(buffer) == 10


@pytest.mark.parametrize("alpha, beta", [(-0.5, 0.4), (0.6, -1.0), (float("nan"), 0.4)])
def test_prioritized_buffer_refuses_negative_exponents(alpha, beta):
    with pytest.raises(ValueError, match="exponents >= 0"):
        PrioritizedEpisodeReplayBuffer(capacity=8, alpha=alpha, beta=beta)


def _edited(state: dict, key: str, value) -> dict:
    state = dict(state)
    if key in state["episodes"][0]:  # a field of the saved episode
        state["episodes"] = [dict(state["episodes"][0], **{key: value})]
    else:
        state[key] = value
    return state


@pytest.mark.parametrize("key, value, match", [
    ("slots", to_plain(np.array([0, 1, 2, 9])), r"episodes\[0\]\.slots"),
    ("is_truncated", True, r"episodes\[0\] is both terminated and truncated"),
    ("free", [4, 5, 6, 6], "uses its slots more than once"),
    ("priorities", to_plain(np.full(8, np.nan)), r"priorities holds NaN"),
    ("priorities", to_plain(np.ones(7)), r"priorities must be 8 numbers"),
    ("max_priority", -1.0, r"max_priority is -1.0"),
    ("num_steps_added_lifetime", -4, r"num_steps_added_lifetime is -4"),
])
def test_set_state_refuses_an_inconsistent_state_and_keeps_the_buffer(key, value, match):
    buffer = filled()
    state = buffer.get_state()
    with pytest.raises(CheckpointError, match=match):
        buffer.set_state(_edited(state, key, value))
    assert buffer.get_state() == state and len(buffer) == 4
    batch = buffer.sample(2)
    buffer.update_priorities(batch["indices"], np.ones(2))  # still usable
