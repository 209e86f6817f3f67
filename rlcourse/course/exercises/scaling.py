"""Exercises of lesson 04 (scaling): speed-up and efficiency from measurements, and what
vectorizing a slow env buys with SYNC and ASYNC sub-envs."""

import math
from collections.abc import Mapping

from rlcourse.course.exercises.common import ExerciseError, passed

__all__ = ["check_scaling_table", "check_vectorize_prediction"]


def _close(a: float, b: float, rel: float = 0.02) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=0.01)


def _all_close(answer: Mapping[int, float], expected: Mapping[int, float]) -> bool:
    return all(_close(float(answer[n]), value) for n, value in expected.items())


def check_scaling_table(throughputs: Mapping[int, float], speedups: Mapping[int, float],
                        efficiencies: Mapping[int, float]) -> None:
    """`throughputs`: measured env steps/s per runner count (must include 1 runner).
    `speedups` and `efficiencies`: the learner's values, keyed by the same runner counts."""
    if 1 not in throughputs:
        raise ExerciseError("The speed-up is measured against 1 runner: include a 1-runner "
                            "measurement in throughputs.")
    for name, answer in (("speedups", speedups), ("efficiencies", efficiencies)):
        missing = sorted(set(throughputs) - set(answer))
        if missing:
            raise ExerciseError(f"{name} has no value for {missing} runner(s): give one for every "
                                f"runner count in throughputs ({sorted(throughputs)}).")
    counts = sorted(throughputs)
    right_speedups = {n: throughputs[n] / throughputs[1] for n in counts}
    right_efficiencies = {n: right_speedups[n] / n for n in counts}
    if not _all_close(speedups, right_speedups):
        if _all_close(speedups, {n: throughputs[1] / throughputs[n] for n in counts}):
            raise ExerciseError("Your speed-ups are upside down: speed-up = throughput with N "
                                "runners / throughput with 1 runner (more than 1 when N is faster).")
        previous = {n: throughputs[n] / throughputs[counts[max(0, i - 1)]]
                    for i, n in enumerate(counts)}
        if _all_close(speedups, previous):
            raise ExerciseError("Compare every row with the 1-runner row, not with the row before.")
        raise ExerciseError(f"Speed-up with N runners = throughputs[N] / throughputs[1]; e.g. for "
                            f"{counts[-1]} runners it is {right_speedups[counts[-1]]:.2f}, not "
                            f"{float(speedups[counts[-1]]):.2f}.")
    if not _all_close(efficiencies, right_efficiencies):
        if _all_close(efficiencies, {n: 100 * e for n, e in right_efficiencies.items()}):
            raise ExerciseError("Give efficiencies as fractions (1.0 = perfect), not percent.")
        if _all_close(efficiencies, {n: n / right_speedups[n] for n in counts}):
            raise ExerciseError("Efficiency = speed-up / runners (not runners / speed-up): the share "
                                "of ideal, linear scaling that you got, at most about 1.0.")
        raise ExerciseError("Efficiency = speed-up / number of runners: 1.0 means each runner "
                            "added a full runner's throughput.")
    best = max(counts, key=lambda n: throughputs[n])
    passed(f"the most env steps/s came from {best} runner(s), a speed-up of "
           f"{right_speedups[best]:.2f}x at {right_efficiencies[best]:.0%} efficiency.")


def check_vectorize_prediction(num_envs: int, step_latency_s: float, sync_steps_per_s: float,
                               async_steps_per_s: float) -> None:
    """Predicted env steps/s of one runner with `num_envs` sub-envs whose step waits
    `step_latency_s` (all other costs ignored), with SYNC and with ASYNC vectorization."""
    sync = 1 / step_latency_s  # num_envs steps per num_envs waits, one after another
    parallel = num_envs / step_latency_s  # num_envs steps per wait: they wait at the same time
    if not _close(sync_steps_per_s, sync, rel=0.1):
        if _close(sync_steps_per_s, parallel, rel=0.1):
            raise ExerciseError("SYNC steps the sub-envs one after another in the runner's process, "
                                "so their waits add up: they do not overlap.")
        raise ExerciseError(f"SYNC: one vector step = {num_envs} waits of {step_latency_s * 1000:g}"
                            f" ms in a row and yields {num_envs} env steps. Steps per second?")
    if not _close(async_steps_per_s, parallel, rel=0.1):
        if _close(async_steps_per_s, sync, rel=0.1):
            raise ExerciseError("ASYNC runs each sub-env in its own process, so their waits "
                                "overlap: what does one vector step cost then?")
        raise ExerciseError(f"ASYNC: one vector step = one wait of {step_latency_s * 1000:g} ms (the "
                            f"sub-envs wait at the same time) and yields {num_envs} env steps.")
    passed(f"SYNC ~{sync:,.0f} and ASYNC ~{parallel:,.0f} env steps/s: with ASYNC, sub-envs that "
           "wait overlap their waits.")
