"""Lesson 05's exercise: V-trace value targets for one fragment of experience.

The learner writes

    my_vtrace(behaviour_logp, target_logp, rewards, values, bootstrap_value, terminated, gamma,
              rho_bar=1.0, c_bar=1.0) -> vs

for a fragment of T steps (arrays of length T; `terminated` says whether its last step ended the
episode). `check_vtrace` compares it with `rlcourse.algorithms.impala.vtrace.vtrace` on cases chosen so
that each typical mistake fails a case of its own, and names that case in its hint. Arrays are
passed read-only, and by position in the stub's order, so the learner may name them freely. No case
uses the lesson's gamma (0.9), so reading the global fails. The stub is reported as not attempted;
the lesson goes on with `reference`.

Review, what answer would still pass that should not? None known beyond hard-coding these four
fragments; rho_bar above 1 is never tried (the exercise's defaults are 1.0 and it names none above).
"""

from collections.abc import Callable

import numpy as np

from rlcourse.algorithms.impala.vtrace import vtrace
from rlcourse.course.exercises.common import ExerciseError, call, exercise, passed

__all__ = ["check_vtrace", "reference_vtrace"]


def reference_vtrace(behaviour_logp, target_logp, rewards, values, bootstrap_value, terminated, gamma,
              rho_bar=1.0, c_bar=1.0) -> np.ndarray:
    """The answer, from rlcourse's own V-trace (which works on many fragments at once)."""
    t = len(rewards)
    next_values = np.append(values[1:], bootstrap_value)
    ends = np.arange(t) == t - 1
    vs, _ = vtrace(behaviour_logp, target_logp, rewards, values, next_values, ends & terminated,
                   ends, gamma, rho_bar, 1.0, c_bar)
    return vs


ARGUMENTS = ("behaviour_logp", "target_logp", "rewards", "values", "bootstrap_value", "terminated",
             "gamma", "rho_bar", "c_bar")  # the stub's order: the checker passes them by position


def _case(rng: np.random.Generator, t: int, ratio_spread: float, terminated: bool, gamma: float,
          rho_bar: float = 1.0, c_bar: float = 1.0) -> dict:
    behaviour_logp = np.log(rng.uniform(0.2, 0.8, t))
    return {"behaviour_logp": behaviour_logp,
            "target_logp": behaviour_logp + rng.uniform(-ratio_spread, ratio_spread, t),
            "rewards": rng.normal(1.0, 0.5, t), "values": rng.normal(5.0, 1.0, t),
            "bootstrap_value": float(rng.normal(5.0, 1.0)), "terminated": terminated,
            "gamma": gamma, "rho_bar": rho_bar, "c_bar": c_bar}


# (name, case, hint if only this kind of case fails). No case uses the lesson's gamma of 0.9.
def _cases() -> list[tuple[str, dict, str]]:
    rng = np.random.default_rng(5)
    return [
        ("on-policy (all ratios 1), not terminated", _case(rng, 5, 0.0, False, 0.95),
         "With pi = mu every rho and c is 1, and v_s is the n-step return bootstrapped from "
         "bootstrap_value: check the recursion v_s = V(x_s) + delta_s + gamma c_s (v_{s+1} - "
         "V(x_{s+1})) and that V(x_T) is bootstrap_value."),
        ("on-policy, terminated", _case(rng, 5, 0.0, True, 0.8),
         "After a termination there is no future: the last step's delta uses no bootstrap value "
         "(its discount is 0), and nothing is carried back across it."),
        ("off-policy, ratios below and above the clip", _case(rng, 6, 1.0, False, 0.99),
         "Clip the importance ratios: rho_t = min(rho_bar, pi/mu) in delta_t, and c_t = min(c_bar, "
         "pi/mu) in the trace. The ratio is exp(target_logp - behaviour_logp)."),
        ("off-policy with rho_bar=0.5 and c_bar=0.8", _case(rng, 6, 1.0, True, 0.85, 0.5, 0.8),
         "rho_bar clips the ratio inside delta_t, c_bar the one that carries later corrections "
         "back: use each in its place."),
    ]


def _targets(case: dict, *, gamma: float | None = None, rho_bar: float | None = None,
             c_bar: float | None = None, invert: bool = False, carry: bool = True,
             bootstrap_after_termination: bool = False) -> np.ndarray:
    """V-trace written out, its keyword arguments planting one typical mistake each."""
    gamma = case["gamma"] if gamma is None else gamma
    rho_bar = case["rho_bar"] if rho_bar is None else rho_bar
    c_bar = case["c_bar"] if c_bar is None else c_bar
    log_ratio = case["target_logp"] - case["behaviour_logp"]
    ratios = np.exp(-log_ratio if invert else log_ratio)
    rho, c = np.minimum(rho_bar, ratios), np.minimum(c_bar, ratios)
    rewards, values = case["rewards"], case["values"]
    vs, next_value, correction = np.zeros(len(rewards)), case["bootstrap_value"], 0.0
    for t in reversed(range(len(rewards))):
        ends = case["terminated"] and t == len(rewards) - 1 and not bootstrap_after_termination
        discount = 0.0 if ends else gamma
        delta = rho[t] * (rewards[t] + discount * next_value - values[t])
        correction = delta + (discount * c[t] * correction if carry else 0.0)
        vs[t], next_value = values[t] + correction, values[t]
    return vs


def _mistakes(case: dict) -> list[tuple[np.ndarray, str]]:
    """What each typical mistake computes on `case`, and the hint that names it."""
    return [
        (_targets(case, gamma=0.9), f"your targets are the ones for gamma=0.9 (the lesson's), but "
         f"this case's gamma is {case['gamma']}: use the gamma argument."),
        (_targets(case, invert=True), "the ratio is pi/mu = exp(target_logp - behaviour_logp); "
         "yours is upside down (mu/pi)."),
        (_targets(case, rho_bar=np.inf, c_bar=np.inf), "the ratios are never clipped: "
         "rho_t = min(rho_bar, ratio_t), c_t = min(c_bar, ratio_t)."),
        (_targets(case, rho_bar=case["c_bar"], c_bar=case["rho_bar"]), "rho_bar and c_bar are "
         "swapped: rho_bar clips the ratio in delta_t, c_bar the one in the trace."),
        (_targets(case, c_bar=case["rho_bar"]), "c_t is clipped with rho_bar; use c_bar."),
        (_targets(case, rho_bar=case["c_bar"]), "rho_t is clipped with c_bar; use rho_bar."),
        (_targets(case, rho_bar=1.0, c_bar=1.0), "your clips are 1.0 whatever rho_bar and c_bar "
         "say: use the arguments."),
        (_targets(case, carry=False), "nothing is carried back: v_s = V(x_s) + delta_s + gamma c_s "
         "(v_{s+1} - V(x_{s+1})), computed backwards from the last step."),
        (_targets(case, bootstrap_after_termination=True), "you bootstrap after a termination: the "
         "last step of a terminated fragment has no future (discount 0)."),
    ]


def _read_only(value):
    if isinstance(value, np.ndarray):
        value = value.copy()
        value.setflags(write=False)
    return value


@exercise("vtrace", stub="my_vtrace", fallback="rlcourse's reference_vtrace (built on its vtrace)",
          reference=lambda my_vtrace: reference_vtrace)
def check_vtrace(my_vtrace: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """Check `my_vtrace(behaviour_logp, target_logp, rewards, values, bootstrap_value, terminated,
    gamma, rho_bar, c_bar)` (called with the arguments in that order) against rlcourse's V-trace;
    raise ExerciseError with a hint if it differs. Returns `my_vtrace` when it is right."""
    for name, case, hint in _cases():
        expected = reference_vtrace(**case)
        inputs = [_read_only(case[k]) for k in ARGUMENTS]
        got = np.asarray(call(my_vtrace, *inputs, where=f"case: {name}"), dtype=np.float64)
        if got.shape != expected.shape:
            raise ExerciseError(f"my_vtrace returned shape {got.shape}; expected {expected.shape}: "
                                "one target v_s per step of the fragment.")
        if not np.allclose(got, expected, rtol=1e-5, atol=1e-5):
            worst = int(np.argmax(np.abs(got - expected)))
            named = [words for wrong, words in _mistakes(case)
                     if not np.allclose(wrong, expected, rtol=1e-5, atol=1e-5)
                     and np.allclose(got, wrong, rtol=1e-5, atol=1e-5)]
            raise ExerciseError(f"Case '{name}' (gamma={case['gamma']}, rho_bar={case['rho_bar']}, "
                                f"c_bar={case['c_bar']}): v_{worst} is {got[worst]:.4f}, expected "
                                f"{expected[worst]:.4f}. Hint: {named[0] if named else hint}")
    passed("your V-trace targets match rlcourse's on-policy, off-policy, clipped and terminated "
           "fragments.")
    return my_vtrace
