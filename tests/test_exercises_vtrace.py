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


def planted(**mistake):
    """`right` with one mistake planted, called by position as the checker calls it."""
    def answer(*args):
        return right(*args, **mistake)
    return answer


def lessons_gamma(behaviour_logp, target_logp, rewards, values, bootstrap_value, terminated, gamma,
                  rho_bar=1.0, c_bar=1.0):
    return right(behaviour_logp, target_logp, rewards, values, bootstrap_value, terminated, 0.9,
                 rho_bar, c_bar)  # the lesson's gamma, not the argument


def inverted_ratio(behaviour_logp, target_logp, *rest):
    return right(target_logp, behaviour_logp, *rest)  # mu / pi


def rho_and_c_swapped(*args):
    *rest, rho_bar, c_bar = args
    return right(*rest, c_bar, rho_bar)


def c_clipped_with_rho_bar(*args):
    *rest, rho_bar, c_bar = args
    return right(*rest, rho_bar, rho_bar)


def default_clips(*args):
    return right(*args[:7])  # rho_bar and c_bar left at 1.0


def one_step_targets(behaviour_logp, target_logp, rewards, values, bootstrap_value, terminated,
                     gamma, rho_bar=1.0, c_bar=1.0):  # v_s = V(x_s) + delta_s: no trace
    rho = np.minimum(rho_bar, np.exp(target_logp - behaviour_logp))
    next_values = np.append(values[1:], 0.0 if terminated else bootstrap_value)
    return values + rho * (rewards + gamma * next_values - values)


def renamed_arguments(mu_logp, pi_logp, r, v, v_last, done, discount, rho_max=1.0, c_max=1.0):
    return right(mu_logp, pi_logp, r, v, v_last, done, discount, rho_max, c_max)


@pytest.mark.parametrize(("wrong", "hint"), [
    (planted(clip=False), "never clipped"),
    (planted(bootstrap_after_termination=True), "bootstrap after a termination"),
    (rho_and_c_swapped, "swapped"),
    (c_clipped_with_rho_bar, "c_t is clipped with rho_bar"),
    (default_clips, "whatever rho_bar and c_bar"),
    (lessons_gamma, "use the gamma argument"),
    (inverted_ratio, "upside down"),
    (one_step_targets, "nothing is carried back"),
], ids=["no-clipping", "bootstraps-after-termination", "rho-and-c-swapped", "c-clipped-with-rho-bar",
        "default-clips", "lessons-gamma", "inverted-ratio", "one-step-target"])
def test_vtrace_rejects_each_mistake_with_its_hint(wrong, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_vtrace(wrong)


def test_vtrace_rejects_changing_the_values_in_place():
    def in_place(behaviour_logp, target_logp, rewards, values, *rest):
        vs = right(behaviour_logp, target_logp, rewards, values, *rest)
        values += 0.0  # e.g. reusing values as the output array
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
        check_vtrace(lambda *args: np.zeros(3))
    with pytest.raises(ExerciseError, match="raised ZeroDivisionError"):
        check_vtrace(lambda *args: 1 / 0)
