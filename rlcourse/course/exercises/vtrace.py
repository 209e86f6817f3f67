"""Lesson 05's exercise: V-trace value targets for one fragment of experience.

The learner writes

    my_vtrace(behaviour_logp, target_logp, rewards, values, bootstrap_value, terminated, gamma,
              rho_bar=1.0, c_bar=1.0) -> vs

for a fragment of T steps (arrays of length T; `terminated` says whether its last step ended the
episode). `check_vtrace` compares it with `rlcourse.algorithms.impala.vtrace.vtrace` on cases chosen so
that each typical mistake fails a case of its own, and names that case in its hint. Arrays are
passed read-only. The stub is reported as not attempted; the lesson goes on with `reference`.
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


def _case(rng: np.random.Generator, t: int, ratio_spread: float, terminated: bool,
          rho_bar: float = 1.0, c_bar: float = 1.0) -> dict:
    behaviour_logp = np.log(rng.uniform(0.2, 0.8, t))
    return {"behaviour_logp": behaviour_logp,
            "target_logp": behaviour_logp + rng.uniform(-ratio_spread, ratio_spread, t),
            "rewards": rng.normal(1.0, 0.5, t), "values": rng.normal(5.0, 1.0, t),
            "bootstrap_value": float(rng.normal(5.0, 1.0)), "terminated": terminated,
            "gamma": 0.9, "rho_bar": rho_bar, "c_bar": c_bar}


# (name, case, hint if only this kind of case fails)
def _cases() -> list[tuple[str, dict, str]]:
    rng = np.random.default_rng(5)
    return [
        ("on-policy (all ratios 1), not terminated", _case(rng, 5, 0.0, False),
         "With pi = mu every rho and c is 1, and v_s is the n-step return bootstrapped from "
         "bootstrap_value: check the recursion v_s = V(x_s) + delta_s + gamma c_s (v_{s+1} - "
         "V(x_{s+1})) and that V(x_T) is bootstrap_value."),
        ("on-policy, terminated", _case(rng, 5, 0.0, True),
         "After a termination there is no future: the last step's delta uses no bootstrap value "
         "(its discount is 0), and nothing is carried back across it."),
        ("off-policy, ratios below and above the clip", _case(rng, 6, 1.0, False),
         "Clip the importance ratios: rho_t = min(rho_bar, pi/mu) in delta_t, and c_t = min(c_bar, "
         "pi/mu) in the trace. The ratio is exp(target_logp - behaviour_logp)."),
        ("off-policy with rho_bar=0.5 and c_bar=0.8", _case(rng, 6, 1.0, True, 0.5, 0.8),
         "rho_bar clips the ratio inside delta_t, c_bar the one that carries later corrections "
         "back: use each in its place."),
    ]


def _read_only(value):
    if isinstance(value, np.ndarray):
        value = value.copy()
        value.setflags(write=False)
    return value


@exercise("vtrace", stub="my_vtrace", fallback="rlcourse's reference_vtrace (built on its vtrace)",
          reference=lambda my_vtrace: reference_vtrace)
def check_vtrace(my_vtrace: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """Check `my_vtrace` against rlcourse's V-trace; raise ExerciseError with a hint if it differs.
    Returns `my_vtrace` when it is right."""
    for name, case, hint in _cases():
        expected = reference_vtrace(**case)
        inputs = {k: _read_only(v) for k, v in case.items()}
        got = np.asarray(call(my_vtrace, **inputs, where=f"case: {name}"), dtype=np.float64)
        if got.shape != expected.shape:
            raise ExerciseError(f"my_vtrace returned shape {got.shape}; expected {expected.shape}: "
                                "one target v_s per step of the fragment.")
        if not np.allclose(got, expected, rtol=1e-5, atol=1e-5):
            worst = int(np.argmax(np.abs(got - expected)))
            raise ExerciseError(f"Case '{name}': v_{worst} is {got[worst]:.4f}, expected "
                                f"{expected[worst]:.4f}. Hint: {hint}")
    passed("your V-trace targets match rlcourse's on-policy, off-policy, clipped and terminated "
           "fragments.")
    return my_vtrace
