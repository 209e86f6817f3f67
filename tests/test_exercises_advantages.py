"""check_gae accepts right GAE functions and names the mistake in typical wrong ones."""

import numpy as np
import pytest

from rlcourse.course.exercises import ExerciseError, check_gae


def make_gae(*, bootstrap_after=lambda episode: not episode.is_terminated,
             discount=lambda gamma, lambda_: gamma * lambda_):
    """A backwards-loop GAE; the keyword arguments let a test plant one typical mistake."""

    def gae(episode, values, gamma, lambda_):
        n = len(episode)
        advantages, last = np.zeros(n), 0.0
        for t in reversed(range(n)):
            future = values[t + 1] if t < n - 1 or bootstrap_after(episode) else 0.0
            delta = episode.rewards[t] + gamma * future - values[t]
            advantages[t] = last = delta + discount(gamma, lambda_) * last
        return advantages

    return gae


def lessons_gamma_and_lambda(episode, values, gamma, lambda_):
    return make_gae()(episode, values, 0.99, 0.95)  # config.gamma and config.lambda_, not the args


def test_the_lessons_gamma_and_lambda_instead_of_the_arguments_are_named():
    with pytest.raises(ExerciseError, match="use the arguments"):
        check_gae(lessons_gamma_and_lambda)


def vectorized_gae(episode, values, gamma, lambda_):
    """Another right answer: deltas at once, then a discounted reverse cumulative sum."""
    next_values = values[1:].copy()
    if episode.is_terminated:
        next_values[-1] = 0.0
    deltas = episode.rewards + gamma * next_values - values[:-1]
    weights = (gamma * lambda_) ** np.arange(len(deltas))
    return [float(np.sum(deltas[t:] * weights[:len(deltas) - t])) for t in range(len(deltas))]


@pytest.mark.parametrize("answer", [make_gae(), vectorized_gae], ids=["loop", "vectorized"])
def test_right_answers_pass(answer, capsys):
    check_gae(answer)
    assert "Correct" in capsys.readouterr().out


def test_bootstrapping_after_a_termination_is_named():
    always = make_gae(bootstrap_after=lambda episode: True)
    with pytest.raises(ExerciseError, match="(?s)terminated chunk.*bootstrapped after a termination"):
        check_gae(always)


def test_not_bootstrapping_after_a_truncation_is_named():
    done_means_no_future = make_gae(
        bootstrap_after=lambda episode: not (episode.is_terminated or episode.is_truncated))
    with pytest.raises(ExerciseError, match="(?s)truncated chunk.*did not bootstrap after a truncation"):
        check_gae(done_means_no_future)


def test_not_bootstrapping_an_ongoing_chunk_is_named():
    only_truncated = make_gae(bootstrap_after=lambda episode: episode.is_truncated)
    with pytest.raises(ExerciseError, match="(?s)ongoing chunk.*did not bootstrap an ongoing chunk"):
        check_gae(only_truncated)


@pytest.mark.parametrize(("discount", "message"), [
    (lambda gamma, lambda_: gamma, "not gamma alone"),
    (lambda gamma, lambda_: lambda_, "not lambda_ alone"),
])
def test_a_wrong_discount_is_named(discount, message):
    with pytest.raises(ExerciseError, match=message):
        check_gae(make_gae(discount=discount))


def test_value_targets_instead_of_advantages_are_named():
    right = make_gae()

    def targets(episode, values, gamma, lambda_):
        return right(episode, values, gamma, lambda_) + values[:-1]

    with pytest.raises(ExerciseError, match="value targets"):
        check_gae(targets)


def test_gae_rejects_advantages_in_reverse_order():
    right = make_gae()

    def appended_backwards(episode, values, gamma, lambda_):
        return list(right(episode, values, gamma, lambda_))[::-1]  # A_{n-1} first, never reversed

    with pytest.raises(ExerciseError, match="in reverse order"):
        check_gae(appended_backwards)


def test_one_value_per_observation_is_the_wrong_length():
    right = make_gae()

    def too_long(episode, values, gamma, lambda_):
        return np.append(right(episode, values, gamma, lambda_), 0.0)

    with pytest.raises(ExerciseError, match="one advantage per action"):
        check_gae(too_long)


def test_forgetting_to_return_and_raising_are_reported():
    with pytest.raises(ExerciseError, match="returned None"):
        check_gae(lambda episode, values, gamma, lambda_: None)

    def broken(episode, values, gamma, lambda_):
        return episode.dones  # no such attribute

    with pytest.raises(ExerciseError, match="raised AttributeError"):
        check_gae(broken)


def test_changing_the_episode_in_place_is_refused():
    right = make_gae()

    def in_place(episode, values, gamma, lambda_):
        advantages = right(episode, values, gamma, lambda_)
        episode.rewards -= 1.0  # e.g. reusing the rewards array as scratch space
        return advantages

    with pytest.raises(ExerciseError, match="change one of its input arrays in place"):
        check_gae(in_place)


def test_gae_rejects_zeroing_the_bootstrap_value_in_place():
    """A learner who 'handles' termination by writing 0 into values[n] changes the caller's array."""
    right = make_gae(bootstrap_after=lambda episode: True)

    def zeroes_values(episode, values, gamma, lambda_):
        if episode.is_terminated:
            values[-1] = 0.0
        return right(episode, values, gamma, lambda_)

    with pytest.raises(ExerciseError, match="change one of its input arrays in place"):
        check_gae(zeroes_values)


def test_a_right_answer_is_returned_and_the_stub_is_not_attempted(capsys):
    right = make_gae()
    assert check_gae(right) is right

    def my_gae(episode, values, gamma, lambda_):
        raise NotImplementedError("TODO: GAE")

    reference = check_gae(my_gae)
    assert "Not attempted yet" in capsys.readouterr().out
    check_gae(reference)
