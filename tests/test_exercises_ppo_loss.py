"""check_clipped_surrogate accepts PPO's clipped loss and names each typical mistake."""

import pytest
import torch

from rlcourse.course.exercises import (
    ExerciseError,
    check_clipped_surrogate,
    reference_clipped_surrogate_loss,
)


def surrogate(ratio, adv, clip, combine=torch.min):
    return combine(ratio * adv, torch.clamp(ratio, 1 - clip, 1 + clip) * adv)


def right(logp, old_logp, advantages, clip_param):
    ratio = torch.exp(logp - old_logp)
    return -surrogate(ratio, advantages, clip_param).mean()


def test_a_right_loss_passes_and_is_returned(capsys):
    assert check_clipped_surrogate(right) is right
    assert "Correct" in capsys.readouterr().out
    check_clipped_surrogate(reference_clipped_surrogate_loss)


def test_a_right_loss_written_with_torch_where_passes():
    def with_where(logp, old_logp, advantages, clip_param):
        ratio = (logp - old_logp).exp()
        clipped = torch.where(advantages > 0, torch.clamp(ratio, max=1 + clip_param),
                              torch.clamp(ratio, min=1 - clip_param))
        return -(clipped * advantages).mean()

    check_clipped_surrogate(with_where)


def test_right_losses_that_break_ties_differently_pass():
    """No ratio sits on a clip bound, where torch.min/minimum split the gradient between equal
    terms and clamp does not: Spinning Up's min_adv form and a minimum/maximum form pass too."""
    def spinning_up(logp, old_logp, advantages, clip_param):
        ratio = torch.exp(logp - old_logp)
        min_adv = torch.where(advantages > 0, (1 + clip_param) * advantages,
                              (1 - clip_param) * advantages)
        return -torch.min(ratio * advantages, min_adv).mean()

    def minimum_maximum(logp, old_logp, advantages, clip_param):
        ratio = torch.exp(logp - old_logp)
        bound = torch.where(advantages > 0, torch.minimum(ratio, torch.tensor(1 + clip_param)),
                            torch.maximum(ratio, torch.tensor(1 - clip_param)))
        return -(bound * advantages).mean()

    check_clipped_surrogate(spinning_up)
    check_clipped_surrogate(minimum_maximum)


@pytest.mark.parametrize(("wrong", "hint"), [
    (lambda lp, old, adv, clip: surrogate(torch.exp(lp - old), adv, clip).mean(),
     "objective, not the loss"),
    (lambda lp, old, adv, clip: -(torch.exp(lp - old) * adv).mean(), "never clipped"),
    (lambda lp, old, adv, clip: -(torch.clamp(torch.exp(lp - old), 1 - clip, 1 + clip) * adv).mean(),
     "only the clipped term"),
    (lambda lp, old, adv, clip: -surrogate(torch.exp(lp - old), adv, clip, torch.max).mean(),
     "max of the two"),
    (lambda lp, old, adv, clip: -surrogate(lp - old, adv, clip).mean(), "is its log"),
    (lambda lp, old, adv, clip: -surrogate(lp / old, adv, clip).mean(), "not logp / old_logp"),
    (lambda lp, old, adv, clip: -surrogate(torch.exp(lp - old), adv, clip).sum(), "mean"),
    (lambda lp, old, adv, clip: -surrogate(torch.exp(lp - old), adv, clip),
     "Return one number"),
    (lambda lp, old, adv, clip: float(right(lp, old, adv, clip)), "Return a torch tensor"),
    (lambda lp, old, adv, clip: right(lp.detach(), old, adv, clip), "no gradient"),
], ids=["returns-the-objective", "no-clip", "clipped-term-only", "max-not-min", "log-ratio",
        "ratio-of-logs", "sum-not-mean", "per-step-losses", "python-float", "detached"])
def test_clipped_surrogate_rejects_each_mistake_with_its_hint(wrong, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_clipped_surrogate(wrong)


def min_of_means(logp, old_logp, advantages, clip_param):
    ratio = torch.exp(logp - old_logp)
    return -torch.min((ratio * advantages).mean(),
                      (torch.clamp(ratio, 1 - clip_param, 1 + clip_param) * advantages).mean())


def min_of_ratios(logp, old_logp, advantages, clip_param):
    ratio = torch.exp(logp - old_logp)
    return -(torch.min(ratio, torch.clamp(ratio, 1 - clip_param, 1 + clip_param)) * advantages).mean()


def detached_clipped_term(logp, old_logp, advantages, clip_param):
    ratio = torch.exp(logp - old_logp)
    clipped = torch.clamp(ratio.detach(), 1 - clip_param, 1 + clip_param)
    return -torch.min(ratio * advantages, clipped * advantages).mean()


def straight_through_clip(logp, old_logp, advantages, clip_param):
    ratio = torch.exp(logp - old_logp)
    clipped = ratio + (torch.clamp(ratio, 1 - clip_param, 1 + clip_param) - ratio).detach()
    return -torch.min(ratio * advantages, clipped * advantages).mean()


def log_ratio_clipped_to_eps(logp, old_logp, advantages, clip_param):
    ratio = torch.exp(logp - old_logp)
    clipped = torch.exp(torch.clamp(logp - old_logp, -clip_param, clip_param))
    return -torch.min(ratio * advantages, clipped * advantages).mean()


def log_ratio_clipped(logp, old_logp, advantages, clip_param):
    ratio = torch.exp(logp - old_logp)
    clipped = torch.clamp(logp - old_logp, 1 - clip_param, 1 + clip_param)
    return -torch.min(ratio * advantages, clipped * advantages).mean()


def lessons_clip_param(logp, old_logp, advantages, clip_param):
    return right(logp, old_logp, advantages, 0.2)  # the lesson's config.clip_param, not the argument


@pytest.mark.parametrize(("wrong", "hint"), [
    (detached_clipped_term, "the clipped term is detached"),
    (straight_through_clip, "straight-through"),
    (log_ratio_clipped_to_eps, r"to \[-eps, eps\]"),
    (log_ratio_clipped, "clipped the log-ratio logp - old_logp, not the ratio"),
    (lessons_clip_param, "use the clip_param argument"),
], ids=["detached-clipped-term", "straight-through", "log-ratio-clipped-to-eps", "log-ratio-clipped",
        "lessons-clip-param"])
def test_clipped_surrogate_names_mistakes_of_the_clip(wrong, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_clipped_surrogate(wrong)


@pytest.mark.parametrize(("wrong", "hint"), [
    (min_of_means, "min of the two means"),
    (min_of_ratios, r"min\(ratio, clip\(ratio\)\) \* A"),
], ids=["min-of-means", "min-of-ratios"])
def test_clipped_surrogate_rejects_taking_the_min_in_the_wrong_place(wrong, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_clipped_surrogate(wrong)


def test_clipped_surrogate_rejects_changing_the_advantages_in_place():
    def in_place(logp, old_logp, advantages, clip_param):
        loss = right(logp, old_logp, advantages, clip_param)
        advantages.mul_(-1.0)
        return loss

    with pytest.raises(ExerciseError, match="in place"):
        check_clipped_surrogate(in_place)


def test_the_stub_is_not_attempted(capsys):
    def clipped_surrogate_loss(logp, old_logp, advantages, clip_param):
        raise NotImplementedError("TODO: PPO's clipped surrogate")

    assert check_clipped_surrogate(clipped_surrogate_loss) is reference_clipped_surrogate_loss
    assert "Not attempted yet" in capsys.readouterr().out


def test_checking_leaves_torchs_random_state_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    check_clipped_surrogate(right)
    assert torch.equal(torch.rand(3), expected)
