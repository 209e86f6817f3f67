"""SingleAgentEpisode: the n+1 observations invariant, returns, and splitting/joining chunks."""

import numpy as np
import pytest

from rlcourse.env.single_agent_episode import SingleAgentEpisode


def make_episode(n: int, start: int = 0, *, t_started: int = 0, id_: str | None = None,
                 terminated: bool = False, truncated: bool = False) -> SingleAgentEpisode:
    """An n-step chunk whose observation at step t is [t] (counted from `start`), reward t + 1."""
    steps = np.arange(start, start + n)
    return SingleAgentEpisode(
        observations=np.arange(start, start + n + 1, dtype=np.float32)[:, None],
        actions=steps % 2,
        rewards=steps + 1.0,
        extra_model_outputs={"action_logp": -0.1 * (steps + 1)},
        is_terminated=terminated, is_truncated=truncated, id_=id_, t_started=t_started)


# -- the n+1 invariant -----------------------------------------------------------------------

def test_n_steps_have_n_plus_one_observations():
    ep = make_episode(3)
    assert len(ep) == 3
    assert ep.observations.shape == (4, 1)
    assert ep.actions.shape == ep.rewards.shape == ep.extra_model_outputs["action_logp"].shape == (3,)
    assert ep.rewards.dtype == np.float32


@pytest.mark.parametrize("n_obs, n_rewards", [(3, 3), (5, 3), (4, 2), (4, 4)],
                         ids=["obs=n", "obs=n+2", "rewards=n-1", "rewards=n+1"])
def test_constructor_refuses_arrays_that_do_not_line_up(n_obs, n_rewards):
    with pytest.raises(ValueError, match="n\\+1 observations"):
        SingleAgentEpisode(np.zeros((n_obs, 2)), np.zeros(3, dtype=np.int64), np.zeros(n_rewards))


def test_constructor_refuses_extra_model_outputs_of_the_wrong_length():
    with pytest.raises(ValueError, match="action_logp"):
        SingleAgentEpisode(np.zeros((4, 2)), np.zeros(3), np.zeros(3),
                           extra_model_outputs={"action_logp": np.zeros(4)})


def test_constructor_refuses_terminated_and_truncated_at_once():
    with pytest.raises(ValueError, match="both terminated and truncated"):
        make_episode(2, terminated=True, truncated=True)


def test_validate_catches_arrays_changed_after_construction():
    ep = make_episode(3)
    ep.validate()  # consistent: no error
    ep.rewards = ep.rewards[:-1]
    with pytest.raises(ValueError, match="n\\+1 observations"):
        ep.validate()
    ep = make_episode(3, truncated=True)
    ep.is_terminated = True
    with pytest.raises(ValueError, match="both terminated and truncated"):
        ep.validate()


def test_an_empty_chunk_is_one_observation():
    ep = SingleAgentEpisode(np.zeros((1, 2)), np.zeros(0), np.zeros(0))
    assert len(ep) == 0
    assert ep.get_return() == 0.0
    assert ep.t == ep.t_started == 0


# -- return, length, t -----------------------------------------------------------------------

def test_get_return_sums_the_rewards():
    ep = make_episode(4)  # rewards 1, 2, 3, 4
    assert ep.get_return() == pytest.approx(10.0)
    assert isinstance(ep.get_return(), float)


def test_len_and_t_count_from_t_started():
    ep = make_episode(5, start=7, t_started=7)
    assert len(ep) == 5
    assert ep.t_started == 7
    assert ep.t == 12


def test_done_flags():
    assert not make_episode(2).is_done
    assert make_episode(2, terminated=True).is_done
    assert make_episode(2, truncated=True).is_done


def test_each_episode_gets_its_own_id():
    assert make_episode(1).id_ != make_episode(1).id_
    assert make_episode(1, id_="abc").id_ == "abc"


# -- cut() -----------------------------------------------------------------------------------

def test_cut_continues_at_the_last_observation():
    ep = make_episode(3, start=4, t_started=4)
    nxt = ep.cut()
    assert len(nxt) == 0
    np.testing.assert_array_equal(nxt.observations, ep.observations[-1:])
    assert nxt.id_ == ep.id_
    assert nxt.t_started == ep.t == 7
    assert not nxt.is_done
    assert set(nxt.extra_model_outputs) == {"action_logp"}
    assert len(nxt.extra_model_outputs["action_logp"]) == 0


@pytest.mark.parametrize("flag", ["terminated", "truncated"])
def test_cut_refuses_a_done_episode(flag):
    ep = make_episode(3, **{flag: True})
    with pytest.raises(ValueError, match="done"):
        ep.cut()


# -- concat_episode() ------------------------------------------------------------------------

def test_concat_joins_a_chunk_that_continues():
    first = make_episode(3, start=0, id_="ep")
    second = make_episode(2, start=3, t_started=3, id_="ep", terminated=True)
    joined = first.concat_episode(second)
    whole = make_episode(5, start=0, id_="ep", terminated=True)  # the same episode in one piece
    np.testing.assert_array_equal(joined.observations, whole.observations)
    np.testing.assert_array_equal(joined.actions, whole.actions)
    np.testing.assert_array_equal(joined.rewards, whole.rewards)
    np.testing.assert_allclose(joined.extra_model_outputs["action_logp"],
                               whole.extra_model_outputs["action_logp"])
    assert (joined.id_, joined.t_started, joined.t, len(joined)) == ("ep", 0, 5, 5)
    assert joined.is_terminated and not joined.is_truncated
    assert joined.get_return() == pytest.approx(first.get_return() + second.get_return())


def test_concat_after_cut_round_trip():
    first = make_episode(2, start=10, t_started=10)
    start = first.cut()
    assert start.t_started == 12
    second = make_episode(3, start=12, t_started=start.t_started, id_=start.id_, truncated=True)
    joined = first.concat_episode(second)
    assert joined.t_started == 10 and joined.t == 15 and joined.is_truncated
    np.testing.assert_array_equal(joined.observations[:, 0], np.arange(10, 16))


def test_concat_keeps_an_ongoing_episode_ongoing():
    joined = make_episode(2, id_="ep").concat_episode(make_episode(2, start=2, t_started=2, id_="ep"))
    assert not joined.is_done and len(joined) == 4


@pytest.mark.parametrize("other_kwargs, message", [
    ({"start": 3, "t_started": 3, "id_": "other"}, "does not continue"),
    ({"start": 3, "t_started": 4, "id_": "ep"}, "does not continue"),
    ({"start": 0, "t_started": 3, "id_": "ep"}, "starts at another observation"),
], ids=["another id_", "t_started is not where the first chunk ends", "another first observation"])
def test_concat_refuses_a_chunk_that_does_not_continue(other_kwargs, message):
    first = make_episode(3, id_="ep")
    with pytest.raises(ValueError, match=message):
        first.concat_episode(make_episode(2, **other_kwargs))


def test_concat_refuses_to_extend_a_done_episode():
    first = make_episode(3, id_="ep", terminated=True)
    with pytest.raises(ValueError, match="does not continue"):
        first.concat_episode(make_episode(2, start=3, t_started=3, id_="ep"))
    ongoing = make_episode(3, id_="ep")  # the same chunk, not done, joins: only being done refused it
    assert len(ongoing.concat_episode(make_episode(2, start=3, t_started=3, id_="ep"))) == 5
