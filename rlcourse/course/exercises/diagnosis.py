"""Exercise of lesson 11 (diagnosing a run): name the bug of each of three broken runs.

The lesson records three runs (`rlcourse.course.diagnosing.mystery_runs`), each the healthy PPO
CartPole run with one of the bugs of `BUGS` put in, and shows only their metrics. The learner writes
`diagnose(runs)` returning {run name: bug}. A wrong name is rejected with the run's own numbers for
the metric that tells its bug apart from the others, never the bug's name.

Review, what answer would still pass that should not? Elimination: a wrong name is answered with
where to look, so trying the six bugs in turn passes within six runs of the checker per run; and
`dict(diagnosing.MYSTERY)`, the answer key the lesson's runs are built from, read instead of the
metrics. The checker sees only the names, not how they were found.
"""

from collections.abc import Callable

import numpy as np
import pandas as pd

from rlcourse.course.diagnosing import BUGS, MYSTERY, START_VALUE, column, late
from rlcourse.course.exercises.common import ExerciseError, call, exercise, passed

__all__ = ["check_diagnosis"]


def _lowest(run: pd.DataFrame, metric: str) -> float:
    return float(np.nanmin(column(run, metric).to_numpy(dtype=float)))


def _highest(run: pd.DataFrame, metric: str) -> float:
    return float(np.nanmax(column(run, metric).to_numpy(dtype=float)))


def _per_iteration(run: pd.DataFrame) -> float:
    return float(column(run, "env_runners/num_env_steps_sampled").mean())


# What each bug's run shows, in its own numbers: the metric that tells it from the others.
TELLS: dict[str, Callable[[pd.DataFrame], str]] = {
    "lr_too_high": lambda run: (
        f"its entropy fell to {_lowest(run, 'entropy'):.3f} and one update's KL reached "
        f"{_highest(run, 'kl'):.2f}: the policy became almost deterministic in a few updates"),
    "value_loss_clipped": lambda run: (
        f"its vf_loss stays at {late(run, 'vf_loss'):.1f} while vf_loss_unclipped is "
        f"{late(run, 'vf_loss_unclipped'):.0f}, with returns on CartPole's scale (one reward per "
        f"step: return {late(run, 'return'):.0f}, episodes {late(run, 'episode_len'):.0f} long)"),
    "no_bootstrap_at_truncation": lambda run: (
        f"its episodes end at a time limit (episode_len_mean {late(run, 'episode_len'):.0f}, never "
        f"above {_highest(run, 'episode_len'):.0f}) and its critic values the start states at "
        f"{late(run, START_VALUE):.0f}, though a policy that keeps the pole up from there collects "
        f"rewards worth about 1 / (1 - gamma) = 100 as long as the episode goes on"),
    "unnormalized_observations": lambda run: (
        f"its return stays at {late(run, 'return'):.0f} and vf_explained_var at "
        f"{late(run, 'vf_explained_var'):.2f}: neither the policy nor the critic learns from what "
        f"it observes, while the loss settings are the healthy run's"),
    "reward_scale_too_large": lambda run: (
        f"its return is {late(run, 'return'):.0f} over episodes of {late(run, 'episode_len'):.0f} "
        f"steps, {late(run, 'return') / late(run, 'episode_len'):.0f} per step, and its vf_loss "
        f"sits at {late(run, 'vf_loss'):.0f} with vf_loss_unclipped at "
        f"{late(run, 'vf_loss_unclipped'):.3g}"),
    "too_few_env_steps_per_update": lambda run: (
        f"each of its iterations sampled {_per_iteration(run):.0f} env steps, fewer than one "
        f"episode; its entropy fell to {_lowest(run, 'entropy'):.2f} and its KL reached "
        f"{_highest(run, 'kl'):.2f}, noisy updates but not a collapse"),
}
# What the bug the learner named would have shown instead.
WOULD_SHOW = {
    "lr_too_high": "a too-high lr collapses the entropy to about 0 with KL spikes above 1",
    "value_loss_clipped": "a clipped value loss keeps vf_loss at or below vf_clip_param (10) with "
                          "rewards of 1 per step",
    "no_bootstrap_at_truncation": "a missing bootstrap shows where episodes end at the time "
                                  "limit, in a critic that values the start states too low",
    "unnormalized_observations": "unnormalized observations keep the return low and "
                                 "vf_explained_var near 0",
    "reward_scale_too_large": "a reward scale shows in the return per step of episode (CartPole "
                              "pays 1) and a vf_loss pinned at vf_clip_param",
    "too_few_env_steps_per_update": "too few env steps per update show in "
                                    "env_runners/num_env_steps_sampled, each iteration's batch",
}


def reference_diagnosis(fn: Callable, runs: dict[str, pd.DataFrame]) -> dict[str, str]:
    """The runs' bugs, as the lesson broke them."""
    return dict(MYSTERY)


@exercise("diagnose_runs", stub="diagnose", fallback="the runs' bugs, as the lesson broke them",
          reference=reference_diagnosis)
def check_diagnosis(fn: Callable[[dict[str, pd.DataFrame]], dict[str, str]],
                    runs: dict[str, pd.DataFrame]) -> dict[str, str]:
    """Check `fn(runs)`, the bug of each mystery run; return the answer when right."""
    answer = call(fn, {name: run.copy() for name, run in runs.items()})  # theirs to change
    if not isinstance(answer, dict):
        raise ExerciseError(f"diagnose returned {type(answer).__name__}; return a dict "
                            f"{{run name: bug}}, e.g. {{'A': 'lr_too_high', ...}}.")
    if set(answer) != set(MYSTERY):
        raise ExerciseError(f"diagnose named the runs {sorted(map(str, answer))}; name each of "
                            f"{sorted(MYSTERY)}, once.")
    for name in sorted(MYSTERY):
        if not isinstance(answer[name], str) or answer[name] not in BUGS:
            raise ExerciseError(f"Run {name}: {answer[name]!r} is not one of the bugs: each run has "
                                f"one of {sorted(BUGS)} (none of them is healthy): name one, as "
                                "a string.")
    for name in sorted(MYSTERY):
        guess, truth = answer[name], MYSTERY[name]
        if guess != truth:
            raise ExerciseError(f"Run {name} is not {guess}: {WOULD_SHOW[guess]}. Look again: "
                                f"{TELLS[truth](runs[name])}.")
    passed("each run's bug named from its metrics: " + ", ".join(
        f"{name} {answer[name]}" for name in sorted(answer)) + ".")
    return answer
