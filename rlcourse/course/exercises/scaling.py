"""Exercises of lesson 04 (scaling): speed-up and efficiency from measurements, and what
vectorizing a slow env buys with SYNC and ASYNC sub-envs.

Both answers are functions, called by the checkers on the lesson's measurements *and* on tables
and settings of their own, so an answer must compute its numbers rather than type them. Inputs are
passed read-only. One table is a machine where more runners are slower than one (speed-ups below
1), so dividing by the slowest row or capping the speed-up at 1 fails. Both checkers return the
learner's function (the stubs: the references below), as every checker does.

Review, what answer would still pass that should not? scaling_table: within 2% (rounding to two
decimals is meant to pass). vectorize_prediction: within 10%, so a small per-step overhead added to
the prediction passes; an answer that caps ASYNC's overlap at os.cpu_count() sub-envs is right on a
machine with 8 or more cores and fails on fewer (the exercise says to ignore all other costs).
"""

import math
from collections.abc import Callable, Mapping
from types import MappingProxyType

from rlcourse.course.exercises.common import ExerciseError, call, exercise, number, passed

__all__ = ["check_scaling_table", "check_vectorize_prediction", "reference_predict_steps_per_s",
           "reference_speedup_and_efficiency"]

# Tables of the checker's own (env steps/s by runner count), beside the lesson's measurement; the
# second does not start with the 1-runner row (a dict's first value is not the baseline); on the
# third machine more runners are slower than one (speed-ups below 1: the slowest row is not the
# baseline either).
OTHER_TABLES = [{1: 4000.0, 2: 7200.0, 4: 7600.0, 8: 7000.0}, {2: 230.0, 1: 120.0, 3: 300.0},
                {1: 5000.0, 2: 4600.0, 4: 3100.0}]


def reference_speedup_and_efficiency(throughputs: Mapping[int, float]
                                     ) -> tuple[dict[int, float], dict[int, float]]:
    """rlcourse's answer: speed-up over 1 runner, and speed-up / runners."""
    speedups = {n: throughputs[n] / throughputs[1] for n in throughputs}
    return speedups, {n: speedups[n] / n for n in throughputs}


def reference_predict_steps_per_s(num_envs: int, step_latency_s: float, mode: str) -> float:
    """rlcourse's answer: SYNC waits add up (num_envs steps per num_envs waits), ASYNC waits overlap
    (num_envs steps per wait)."""
    return 1 / step_latency_s if mode == "SYNC" else num_envs / step_latency_s


def _close(a: float, b: float, rel: float = 0.02) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=0.01)


def _all_close(answer: Mapping[int, float], expected: Mapping[int, float]) -> bool:
    return all(_close(answer[n], value) for n, value in expected.items())


def _table_answer(fn: Callable, throughputs: Mapping[int, float]):
    try:
        result = call(fn, MappingProxyType(dict(throughputs)), where=f"on {dict(throughputs)}")
    except ExerciseError as e:
        if "does not support item assignment" in str(e) or "has no attribute 'pop'" in str(e):
            raise ExerciseError("Your function changed `throughputs` in place: leave it as it is "
                                "(the lesson still needs it) and build new dicts.") from None
        raise
    if not (isinstance(result, tuple) and len(result) == 2
            and all(isinstance(d, Mapping) for d in result)):
        raise ExerciseError("Return two dicts, keyed by runner count: (speedups, efficiencies).")
    return result


def _check_table(throughputs: Mapping[int, float], speedups: Mapping[int, float],
                 efficiencies: Mapping[int, float]) -> None:
    for name, answer in (("speedups", speedups), ("efficiencies", efficiencies)):
        missing = sorted(set(throughputs) - set(answer))
        if missing:
            raise ExerciseError(f"{name} has no value for {missing} runner(s): give one for every "
                                f"runner count in throughputs ({sorted(throughputs)}). Build the dicts "
                                "from `throughputs`: the checker also calls your function with "
                                "tables of its own, so typed-in numbers fail.")
    speedups, efficiencies = ({n: number(answer[n], f"{name}[{n}]") for n in throughputs}
                              for name, answer in (("speedups", speedups),
                                                   ("efficiencies", efficiencies)))
    counts = sorted(throughputs)
    right_speedups, right_efficiencies = reference_speedup_and_efficiency(throughputs)
    if not _all_close(speedups, right_speedups):
        if _all_close(speedups, {n: throughputs[1] / throughputs[n] for n in counts}):
            raise ExerciseError("Your speed-ups are upside down: speed-up = throughput with N "
                                "runners / throughput with 1 runner (more than 1 when N is faster).")
        first = next(iter(throughputs.values()))
        if _all_close(speedups, {n: throughputs[n] / first for n in counts}):
            raise ExerciseError(f"On {dict(throughputs)} you divided by the first row, which is not "
                                "the 1-runner row: divide by throughputs[1], whatever the order.")
        slowest = min(throughputs.values())
        if _all_close(speedups, {n: throughputs[n] / slowest for n in counts}):
            raise ExerciseError(f"On {dict(throughputs)} you divided by the slowest row; on this "
                                "machine more runners are slower than one (speed-ups below 1). "
                                "Divide by throughputs[1], whichever row is slowest.")
        if _all_close(speedups, {n: max(1.0, right_speedups[n]) for n in counts}):
            raise ExerciseError(f"On {dict(throughputs)} more runners are slower than one: the "
                                "speed-up is below 1 there. Do not cap it at 1.")
        previous = {n: throughputs[n] / throughputs[counts[max(0, i - 1)]]
                    for i, n in enumerate(counts)}
        if _all_close(speedups, previous):
            raise ExerciseError("Compare every row with the 1-runner row, not with the row before.")
        raise ExerciseError(f"Speed-up with N runners = throughputs[N] / throughputs[1]; on "
                            f"{dict(throughputs)}, for {counts[-1]} runners it is "
                            f"{right_speedups[counts[-1]]:.2f}, not "
                            f"{speedups[counts[-1]]:.2f}. (Compute from `throughputs`: "
                            "numbers typed from one measurement fail on another table.)")
    if not _all_close(efficiencies, right_efficiencies):
        if _all_close(efficiencies, {n: 100 * e for n, e in right_efficiencies.items()}):
            raise ExerciseError("Give efficiencies as fractions (1.0 = perfect), not percent.")
        if _all_close(efficiencies, {n: n / right_speedups[n] for n in counts}):
            raise ExerciseError("Efficiency = speed-up / runners (not runners / speed-up): the share "
                                "of ideal, linear scaling that you got, at most about 1.0.")
        raise ExerciseError("Efficiency = speed-up / number of runners: 1.0 means each runner "
                            "added a full runner's throughput.")


@exercise("scaling_table", stub="speedup_and_efficiency",
          fallback="rlcourse's reference_speedup_and_efficiency on your measurements",
          reference=lambda fn, throughputs: reference_speedup_and_efficiency)
def check_scaling_table(speedup_and_efficiency: Callable, throughputs: Mapping[int, float]
                        ) -> Callable:
    """`speedup_and_efficiency(throughputs) -> (speedups, efficiencies)`, checked on `throughputs`
    (measured env steps/s per runner count, including 1 runner) and on tables of the checker's own.
    Returns `speedup_and_efficiency` when it is right."""
    if 1 not in throughputs:
        raise ExerciseError("The speed-up is measured against 1 runner: include a 1-runner "
                            "measurement in throughputs.")
    for table in OTHER_TABLES:
        _check_table(table, *_table_answer(speedup_and_efficiency, table))
    _check_table(throughputs, *_table_answer(speedup_and_efficiency, throughputs))
    right_speedups, right_efficiencies = reference_speedup_and_efficiency(throughputs)
    best = max(throughputs, key=lambda n: throughputs[n])
    passed(f"in your measurement the most env steps/s came from {best} runner(s), a speed-up of "
           f"{right_speedups[best]:.2f}x at {right_efficiencies[best]:.0%} efficiency.")
    return speedup_and_efficiency


# (num_envs, step_latency_s) the prediction is checked with; the lesson measures the first.
SETTINGS = [(4, 0.005), (8, 0.002), (2, 0.01)]


@exercise("vectorize_prediction", stub="predict_steps_per_s",
          fallback="rlcourse's reference_predict_steps_per_s",
          reference=lambda fn: reference_predict_steps_per_s)
def check_vectorize_prediction(predict_steps_per_s: Callable[[int, float, str], float]) -> Callable:
    """`predict_steps_per_s(num_envs, step_latency_s, mode)`: env steps/s of one runner with
    `num_envs` sub-envs whose step waits `step_latency_s` (all other costs ignored), for mode
    "SYNC" or "ASYNC". Checked on several settings; returns the function when it is right."""
    for num_envs, latency in SETTINGS:
        sync = reference_predict_steps_per_s(num_envs, latency, "SYNC")
        parallel = reference_predict_steps_per_s(num_envs, latency, "ASYNC")
        where = f"num_envs={num_envs}, step_latency_s={latency}"
        got_sync, got_async = (number(call(predict_steps_per_s, num_envs, latency, mode, where=where),
                                      f"predict_steps_per_s({num_envs}, {latency}, {mode!r})")
                               for mode in ("SYNC", "ASYNC"))
        same = (f" (Your function gives {got_sync:g} env steps/s for SYNC and for ASYNC: does it "
                "read `mode`, the string \"SYNC\" or \"ASYNC\" in capitals?)"
                if _close(got_sync, got_async, rel=0.01) else "")
        if not _close(got_sync, sync, rel=0.1):
            if _close(got_sync, parallel, rel=0.1):
                raise ExerciseError("SYNC steps the sub-envs one after another in the runner's "
                                    "process, so their waits add up: they do not overlap." + same)
            if _close(got_sync, 1 / (num_envs * latency), rel=0.1):
                raise ExerciseError(f"SYNC ({where}): one vector step takes {num_envs} waits but "
                                    f"also yields {num_envs} env steps: count env steps, not "
                                    "vector steps.")
            raise ExerciseError(f"SYNC ({where}): one vector step = {num_envs} waits of "
                                f"{latency * 1000:g} ms in a row and yields {num_envs} env steps. "
                                "Steps per second? (Compute from the arguments.)")
        if not _close(got_async, parallel, rel=0.1):
            if _close(got_async, sync, rel=0.1):
                raise ExerciseError("ASYNC runs each sub-env in its own process, so their waits "
                                    "overlap: what does one vector step cost then?" + same)
            raise ExerciseError(f"ASYNC ({where}): one vector step = one wait of {latency * 1000:g}"
                                f" ms (the sub-envs wait at the same time) and yields {num_envs} "
                                "env steps. (Compute from the arguments.)")
    num_envs, latency = SETTINGS[0]
    passed(f"with {num_envs} sub-envs waiting {latency * 1000:g} ms: SYNC "
           f"~{reference_predict_steps_per_s(num_envs, latency, 'SYNC'):,.0f} and ASYNC "
           f"~{reference_predict_steps_per_s(num_envs, latency, 'ASYNC'):,.0f} env steps/s; "
           "with ASYNC, sub-envs that wait overlap their waits.")
    return predict_steps_per_s
