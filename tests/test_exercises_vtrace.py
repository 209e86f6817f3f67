"""check_vtrace accepts a right V-trace and names the case each typical mistake breaks."""

import numpy as np
import pytest

from rlcourse.course.exercises import ExerciseError, check_vtrace


def right(behaviour_logp, target_logp, rewards, values, bootstrap_value, terminated, gamma,
          rho_bar=1.0, c_bar=1.0, clip=True, bootstrap_after_termination=False):
    """A learner's loop over the fragment, backwards (the keyword flags make it wrong on purpose)."""
    ratio = np.exp(target_logp - behaviour_logp)
    rho = np.minimum(rho_bar, ratio) if clip else ratio
    c = np.minimum(c_bar, ratio) if clip else ratio
    t = len(rewards)
    vs = np.zeros(t)
    next_v, next_vs_minus_v = bootstrap_value, 0.0
    for s in reversed(range(t)):
        discount = gamma
        if s == t - 1 and terminated and not bootstrap_after_termination:
            discount = 0.0
        delta = rho[s] * (rewards[s] + discount * next_v - values[s])
        next_vs_minus_v = delta + discount * c[s] * next_vs_minus_v
        vs[s] = values[s] + next_vs_minus_v
        next_v = values[s]
    return vs


def test_a_right_answer_passes(capsys):
    check_vtrace(right)
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize(("wrong", "case"), [
    (lambda **kw: right(**kw, clip=False), "off-policy, ratios below and above the clip"),
    (lambda **kw: right(**kw, bootstrap_after_termination=True), "on-policy, terminated"),
    (lambda **kw: right(**{**kw, "rho_bar": kw["c_bar"], "c_bar": kw["rho_bar"]}),
     "rho_bar=0.5 and c_bar=0.8"),
    (lambda **kw: kw["values"] + kw["rewards"], "on-policy (all ratios 1), not terminated"),
], ids=["no-clipping", "bootstraps-after-termination", "rho-and-c-swapped", "one-step-target"])
def test_vtrace_rejects_each_mistake_with_the_case_named(wrong, case):
    with pytest.raises(ExerciseError, match=case.replace("(", r"\(").replace(")", r"\)")):
        check_vtrace(wrong)


def test_vtrace_rejects_changing_the_values_in_place():
    def in_place(**kw):
        vs = right(**kw)
        kw["values"] += 0.0  # e.g. reusing values as the output array
        return vs

    with pytest.raises(ExerciseError, match="in place"):
        check_vtrace(in_place)


def test_the_stub_is_not_attempted(capsys):
    def my_vtrace(behaviour_logp, target_logp, rewards, values, bootstrap_value, terminated, gamma,
                  rho_bar=1.0, c_bar=1.0):
        raise NotImplementedError("TODO: V-trace")

    reference = check_vtrace(my_vtrace)
    assert "Not attempted yet" in capsys.readouterr().out
    assert check_vtrace(reference) is reference


def test_a_wrong_shape_and_an_exception_are_reported():
    with pytest.raises(ExerciseError, match="shape"):
        check_vtrace(lambda **kw: np.zeros(3))
    with pytest.raises(ExerciseError, match="raised ZeroDivisionError"):
        check_vtrace(lambda **kw: 1 / 0)
