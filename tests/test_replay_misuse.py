"""Replay buffers refuse misuse at the call that makes it, leaving the buffer as it was: TD errors
that are not finite, indices that are not stored steps, n_step < 1, exponents below 0, a saved
state that is not whole and consistent."""

import numpy as np
import pytest

from rlcourse.env.single_agent_episode import SingleAgentEpisode
from rlcourse.utils.checkpoints import CheckpointError
from rlcourse.utils.replay_buffers import EpisodeReplayBuffer, PrioritizedEpisodeReplayBuffer
from rlcourse.utils.serialization import to_plain


def filled(buffer_class=PrioritizedEpisodeReplayBuffer, capacity: int = 8):
    buffer = buffer_class(capacity=capacity, seed=0)
    obs = np.arange(5, dtype=np.float32)[:, None]
    buffer.add([SingleAgentEpisode(obs, np.zeros(4, dtype=np.int64), np.ones(4, np.float32), None,
                                   True, False, id_="a")])
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


@pytest.mark.parametrize("alpha, beta", [(-0.5, 0.4), (0.6, -1.0), (float("nan"), 0.4)])
def test_prioritized_buffer_refuses_negative_exponents(alpha, beta):
    with pytest.raises(ValueError, match="exponents >= 0"):
        PrioritizedEpisodeReplayBuffer(capacity=8, alpha=alpha, beta=beta)


def _edited(state: dict, key: str, value) -> dict:
    state = dict(state)
    if key == "slots":
        episode = dict(state["episodes"][0], slots=to_plain(np.array([0, 1, 2, 9])))
        state["episodes"] = [episode]
    else:
        state[key] = value
    return state


@pytest.mark.parametrize("key, value, match", [
    ("slots", None, r"episodes\[0\]\.slots"),
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
