"""check_wis (lesson 13) accepts right weighted importance-sampling estimates, agrees with
rlcourse's estimator, and names each typical mistake in its hint."""

import numpy as np
import pytest

from rlcourse.course.exercises import ExerciseError, check_wis
from rlcourse.course.exercises.common import solution_source


def solution():
    namespace = {}
    exec(solution_source("weighted_importance_sampling"), namespace)
    return namespace["my_wis"]


def make_wis(*, ratio=lambda t, b: t - b, cumulative=True, normalize="all", discount_from=0,
             gamma_used=None):
    """A loop-per-step estimate; the keywords plant one typical mistake."""

    def my_wis(rewards, behavior_logp, target_logp, gamma):
        g = gamma if gamma_used is None else gamma_used
        episodes = []
        for rew, b, t in zip(rewards, behavior_logp, target_logp, strict=True):
            logs = ratio(t, b)
            episodes.append((rew, np.exp(np.cumsum(logs) if cumulative else logs)))
        horizon = max(len(r) for r in rewards)
        total = 0.0
        for step in range(horizon):
            alive = [(r[step], p[step]) for r, p in episodes if step < len(r)]
            ended = [p[-1] for r, p in episodes if step >= len(r)]
            if normalize == "all":
                w = (sum(p for _, p in alive) + sum(ended)) / len(episodes)
            elif normalize == "survivors":
                w = sum(p for _, p in alive) / len(alive)
            else:
                w = 1.0
            total += g ** (step + discount_from) * sum(r * p / w for r, p in alive)
        return total / len(episodes)

    return my_wis


def discount_inside_the_weights(rewards, behavior_logp, target_logp, gamma):
    """Padded arrays, with gamma ** t multiplied into p_t before w_t is taken: it cancels."""
    horizon = max(map(len, rewards))
    r, p = np.zeros((len(rewards), horizon)), np.zeros((len(rewards), horizon))
    for i, (rew, b, t) in enumerate(zip(rewards, behavior_logp, target_logp, strict=True)):
        r[i, :len(rew)], p[i, :len(rew)] = rew, np.exp(np.cumsum(t - b))
        p[i, len(rew):] = p[i, len(rew) - 1]
    p = p * gamma ** np.arange(horizon)
    return float(np.mean(np.sum(p / p.mean(0) * r, axis=1)))


def padded_with_one(rewards, behavior_logp, target_logp, gamma):
    """p_t set to 1 after an episode's end (instead of its last value)."""
    horizon = max(map(len, rewards))
    r, p = np.zeros((len(rewards), horizon)), np.ones((len(rewards), horizon))
    for i, (rew, b, t) in enumerate(zip(rewards, behavior_logp, target_logp, strict=True)):
        r[i, :len(rew)], p[i, :len(rew)] = rew, np.exp(np.cumsum(t - b))
    return float(np.mean(np.sum(p / p.mean(0) * r * gamma ** np.arange(horizon), axis=1)))


def test_right_answers_pass_and_are_returned(capsys):
    loop = make_wis()
    assert check_wis(loop) is loop
    assert check_wis(solution()) is not None
    assert capsys.readouterr().out.count("Correct") == 2


@pytest.mark.parametrize(("answer", "hint"), [
    (make_wis(normalize="none"), "ordinary .*importance sampling"),
    (make_wis(ratio=lambda t, b: t), "only pi_e's probabilities"),
    (make_wis(ratio=lambda t, b: b - t), "upside down"),
    (make_wis(cumulative=False), "its own ratio only"),
    (make_wis(normalize="survivors"), "episodes that reach step t only"),
    (make_wis(discount_from=1), "discounts start at gamma"),
    (make_wis(gamma_used=1.0), "do not discount"),
    (padded_with_one, "pad p_t with 1. An ended episode keeps its last p_t"),
    (discount_inside_the_weights, "put gamma \\*\\* t into p_t before dividing by w_t"),
    (make_wis(gamma_used=0.99), "gamma=0.99"),
    (lambda rewards, b, t, gamma: np.mean([np.sum(gamma ** np.arange(len(r)) * r)
                                           for r in rewards]), "behaviour policy's"),
], ids=["no-normalization", "no-behaviour-probabilities", "inverted", "not-cumulative",
        "survivors-only", "discount-off-by-one", "no-discount", "padded-with-one", "discount-in-p",
        "lesson-gamma", "behaviour-return"])
def test_typical_mistakes_are_named(answer, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_wis(answer)


def test_trajectory_wise_weights_are_named():
    def trajectory(rewards, behavior_logp, target_logp, gamma):
        weights = np.array([np.exp(np.sum(t - b))
                            for t, b in zip(target_logp, behavior_logp, strict=True)])
        returns = np.array([np.sum(gamma ** np.arange(len(r)) * r) for r in rewards])
        return float(np.sum(weights * returns) / np.sum(weights))
    with pytest.raises(ExerciseError, match="trajectory-wise"):
        check_wis(trajectory)


def test_typed_numbers_in_place_changes_and_wrong_types_are_refused():
    with pytest.raises(ExerciseError, match="same number for three"):
        check_wis(lambda *args: 12.5)
    def in_place(rewards, behavior_logp, target_logp, gamma):
        rewards[0] *= gamma
        return 0.0
    with pytest.raises(ExerciseError, match="in place"):
        check_wis(in_place)
    with pytest.raises(ExerciseError, match="return one number"):
        check_wis(lambda *args: [1.0, 2.0])


def test_the_stub_is_not_attempted_and_the_reference_goes_on(capsys):
    def my_wis(rewards, behavior_logp, target_logp, gamma):
        raise NotImplementedError("TODO")
    reference = check_wis(my_wis)
    assert "Not attempted yet" in capsys.readouterr().out
    assert reference([np.ones(2)], [np.zeros(2)], [np.zeros(2)], 0.5) == pytest.approx(1.5)
