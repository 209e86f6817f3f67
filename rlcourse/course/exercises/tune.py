"""Exercise of lesson 07 (Ray Tune): pick the best config of a sweep robustly.

The learner writes `pick_best_config(df, varied)`: from every reported iteration of every trial (the
concatenated `metrics_dataframe`s of a ResultGrid), the config (the values of the `varied` columns)
whose seeds have the best mean *last reported* return. The checker builds its own sweeps, each with
one trap: a config with one lucky seed, a config that peaked early and fell, a slow starter that
ends best (rows shuffled: a trial's last row is not its end), errored trials (NaN) in a losing
config, in the winning config and in a config far ahead (so neither dropping NaN rows first, nor
counting NaN as 0, nor dropping the errored trial's whole config picks right, and each picks wrong
on a sweep where the others do not), trials stopped early among shuffled rows (so neither dropping
them nor a trial's first or last row picks right), one seed far above its config's others (the mean,
not the median), and two varied settings with one config run on more seeds (the mean, not the sum).
Random values in each case, so an answer typed from a printout fails.

Review, what answer would still pass that should not? The best mean always leads by more than 5,
so an answer that breaks near-ties differently passes. Sorting by another column that grows with
the iterations would pick the same rows, but these sweeps have no such column.
"""

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rlcourse.course.exercises.common import ExerciseError, call, exercise, narrowed, number, passed

__all__ = ["check_pick_best_config", "reference_pick_best_config"]

RETURN = "env_runners/episode_return_mean"


def final_returns(df: pd.DataFrame, varied: Sequence[str]) -> pd.DataFrame:
    """Each trial's last reported return (by training_iteration), with its varied settings."""
    last = df.sort_values("training_iteration").groupby("trial_id").tail(1)
    return last[["trial_id", *varied, RETURN]]


def reference_pick_best_config(df: pd.DataFrame, varied: Sequence[str]) -> dict[str, Any]:
    """rlcourse's answer: per trial the last reported return; errored trials (NaN) left out; per
    config the mean over its seeds; the config with the best mean."""
    finals = final_returns(df, list(varied)).dropna(subset=[RETURN])
    means = finals.groupby(list(varied))[RETURN].mean()
    best = means.idxmax()
    best = best if isinstance(best, tuple) else (best,)
    return {name: value.item() if hasattr(value, "item") else value
            for name, value in zip(varied, best, strict=True)}


# --- the checker's sweeps -------------------------------------------------------------------------

def _trial(rows: list, trial_id: str, settings: dict[str, Any], seed: int, curve) -> None:
    for iteration, value in enumerate(curve, start=1):
        rows.append({"trial_id": trial_id, "training_iteration": iteration, RETURN: value,
                     **{f"config/{k}": v for k, v in settings.items()}, "config/seed": seed})


def _sweep(rng: np.random.Generator, configs: dict[str, tuple[dict, list]], iterations: int = 8):
    """configs: name -> (settings, [curve kind per seed]). A curve kind is (start, end) for a
    steady rise, ("peak", peak, end) for an early peak and a fall, ("nan", end) for a trial that
    errored at its last iteration, ("slow", end) for a late rise, or ("short", n, start, end) for a
    trial stopped after n iterations."""
    rows: list = []
    for name, (settings, kinds) in configs.items():
        for seed, kind in enumerate(kinds):
            noise = rng.normal(0, 1.0, iterations)
            if kind[0] == "peak":
                curve = np.r_[np.linspace(20, kind[1], 3), np.linspace(kind[1], kind[2], iterations - 3)]
            elif kind[0] == "nan":
                curve = np.r_[np.linspace(20, kind[1], iterations - 1), np.nan]
            elif kind[0] == "short":
                curve = np.linspace(kind[2], kind[3], kind[1])
            elif kind[0] == "slow":
                curve = 20 + (kind[1] - 20) * np.linspace(0, 1, iterations) ** 3
            else:
                curve = np.linspace(kind[0], kind[1], iterations)
            curve = curve + noise[:len(curve)] * 0.5
            _trial(rows, f"{name}_{seed:05d}", settings, seed, curve)
    return pd.DataFrame(rows)


def _shuffled(rng: np.random.Generator, df: pd.DataFrame) -> pd.DataFrame:
    """`df` with its trials in random order and each trial's rows rotated, so that its last
    iteration sits in the middle: neither its first nor its last row is its end."""
    n = df.groupby("trial_id")["training_iteration"].transform("max")
    rank = df["trial_id"].map(dict(zip(df["trial_id"].unique(),
                                       rng.permutation(df["trial_id"].nunique()), strict=True)))
    order = (df["training_iteration"] + n // 2) % n
    return df.assign(_rank=rank, _order=order).sort_values(["_rank", "_order"]).drop(
        columns=["_rank", "_order"])


def checker_cases(seed: int = 0) -> list[tuple[str, pd.DataFrame, list[str]]]:
    """(what the case tests, dataframe, varied columns): each with one trap, values drawn anew."""
    rng = np.random.default_rng(seed)
    lrs = np.round(np.sort(rng.choice(np.geomspace(1e-5, 1e-1, 40), 4, replace=False)), 8).tolist()
    a, b, c, d = (float(x) for x in rng.permutation(lrs))
    scale = float(rng.uniform(0.8, 1.2))

    def s(x):
        return x * scale

    cases = [
        ("one lucky seed", _sweep(rng, {
            "lucky": ({"lr": a}, [(20, s(25)), (20, s(30)), (20, s(250))]),
            "steady": ({"lr": b}, [(20, s(110)), (20, s(120)), (20, s(115))]),
            "weak": ({"lr": c}, [(20, s(40)), (20, s(45)), (20, s(50))])}), ["config/lr"]),
        ("an early peak that fell", _sweep(rng, {
            "peaked": ({"lr": a}, [("peak", s(400), s(40)), ("peak", s(380), s(35)),
                                   ("peak", s(390), s(45))]),
            "steady": ({"lr": b}, [(20, s(100)), (20, s(95)), (20, s(105))])}), ["config/lr"]),
        ("a slow start that ends best, rows out of order", _shuffled(rng, _sweep(rng, {
            "quick": ({"lr": c}, [(s(100), s(110)), (s(105), s(112)), (s(98), s(108))]),
            "slow": ({"lr": d}, [("slow", s(160)), ("slow", s(170)), ("slow", s(150))])})),
         ["config/lr"]),
        # The errored trial had done well before it failed: counted with its last number (NaN
        # rows dropped first), its config wins; left out, its config's other seeds lose.
        ("an errored trial (NaN) that had done well", _sweep(rng, {
            "errored": ({"lr": a}, [(20, s(60)), ("nan", s(220)), (20, s(62))]),
            "fine": ({"lr": b}, [(20, s(100)), (20, s(98)), (20, s(102))])}), ["config/lr"]),
        # The errored trial had reached little: counted with its last number, its config loses; its
        # config dropped whole, the other wins. Left out, its config's other seeds win.
        ("an errored trial in the best config", _sweep(rng, {
            "errored": ({"lr": c}, [(20, s(120)), ("nan", s(30)), (20, s(118))]),
            "fine": ({"lr": d}, [(20, s(100)), (20, s(98)), (20, s(102))])}), ["config/lr"]),
        # Far ahead even with its errored trial counted as 0: only dropping its whole config loses.
        ("an errored trial in a config far ahead", _sweep(rng, {
            "errored": ({"lr": a}, [(20, s(160)), ("nan", s(30)), (20, s(158))]),
            "fine": ({"lr": d}, [(20, s(100)), (20, s(98)), (20, s(102))])}), ["config/lr"]),
        # Two seeds stopped early (low), one ran on (high): dropping the stopped trials picks
        # "stopped", and so does taking a trial's first or last row (see _shuffled).
        ("trials stopped early, rows out of order", _shuffled(rng, _sweep(rng, {
            "stopped": ({"lr": a}, [("short", 3, s(50), s(60)), ("short", 3, s(50), s(58)),
                                    (s(50), s(200))]),
            "full": ({"lr": b}, [(20, s(120)), (20, s(125)), (20, s(118))])})),
         ["config/lr"]),
        ("one seed far above its config's others (the mean, not the median)", _sweep(rng, {
            "skewed": ({"lr": c}, [(20, s(100)), (20, s(105)), (20, s(260))]),
            "even": ({"lr": d}, [(20, s(140)), (20, s(138)), (20, s(142))])}), ["config/lr"]),
        ("two varied settings", _sweep(rng, {
            "a4": ({"lr": a, "num_epochs": 4}, [(20, s(90)), (20, s(95))]),
            "a8": ({"lr": a, "num_epochs": 8}, [(20, s(130)), (20, s(125))]),
            "b4": ({"lr": b, "num_epochs": 4}, [(20, s(110)), (20, s(112)), (20, s(108))]),
            "b8": ({"lr": b, "num_epochs": 8}, [(20, s(40)), (20, s(200))])}),
         ["config/lr", "config/num_epochs"]),
    ]
    return cases


# --- what the usual mistakes pick, to name them -----------------------------------------------

def _as_config(row: pd.Series, varied: list[str]) -> dict[str, Any]:
    return {name: row[name] for name in varied}


def _tuple(value: Any) -> tuple:
    return value if isinstance(value, tuple) else (value,)


def _mistakes(df: pd.DataFrame, varied: list[str]) -> list[tuple[dict, str]]:
    finals = final_returns(df, varied)
    errored = set(finals.loc[finals[RETURN].isna(), "trial_id"])
    per_trial_max = df.groupby("trial_id")[RETURN].max()
    best_ever = df.loc[df["trial_id"] == per_trial_max.idxmax()].iloc[0]
    lucky = finals.loc[finals[RETURN].idxmax()]

    def best_mean(rows: pd.DataFrame) -> dict[str, Any]:
        best = rows.groupby(varied)[RETURN].mean().idxmax()
        return dict(zip(varied, _tuple(best), strict=True))

    ran_all = df.groupby("trial_id")["training_iteration"].transform("max") == \
        df["training_iteration"].max()
    clean_configs = finals.groupby(varied)[RETURN].transform(lambda x: x.notna().all())
    mistakes = [
        (_as_config(best_ever, varied), "the best return any iteration reached (the max of the "
         "curve) rewards a trial that peaked early and fell; use each trial's last reported return"),
        (_as_config(lucky, varied), "the single best trial is one lucky seed; average each "
         "config's seeds (groupby the varied columns, then mean)"),
        (best_mean(df), "the mean over every iteration weighs the whole curve, early iterations "
         "included; take each trial's last reported iteration only"),
        (best_mean(df.groupby("trial_id").tail(1)), "rows may come in any order: a trial's last "
         "row is not its last iteration; sort by training_iteration first (or take the row of the "
         "largest one)"),
        (dict(zip(varied, _tuple(finals.groupby(varied)[RETURN].median().idxmax()), strict=True)),
         "the exercise asks for the mean over each config's seeds, not the median"),
        # Listed on sweeps without an errored trial too (where it picks right), so that those
        # sweeps tell it from the sum: `narrowed` rules out a mistake only where it is listed.
        (best_mean(finals.fillna({RETURN: 0.0})), "an errored trial's NaN counted as a return of 0 "
         "(fillna(0), or a sum divided by the number of seeds) pulls its config's mean down; leave "
         "the errored trial out of the mean instead"),
        (dict(zip(varied, _tuple(finals.groupby(varied)[RETURN].sum().idxmax()), strict=True)),
         "a sum over seeds favours the config with more of them (an errored trial left out "
         "leaves its config one short); take the mean"),
        (best_mean(df.groupby("trial_id").head(1)), "a trial's first row is not its last "
         "iteration either; sort by training_iteration and take each trial's last row"),
    ]
    for _, row in finals[finals[RETURN].isna()].iterrows():
        mistakes.append((_as_config(row, varied), "an errored trial's last return is NaN, and a "
                         "NaN mean (or a NaN in max()) wins by accident: leave errored trials out "
                         "(dropna on each trial's last return) before averaging"))
    if errored:
        mistakes += [
            (best_mean(final_returns(df.dropna(subset=[RETURN]), varied)), "an errored trial's "
             "last report is NaN: dropping the NaN rows first (or groupby(...).last(), which skips "
             "NaN) makes an earlier, lower return look like its final one. Take each trial's last "
             "row (sort, then tail(1)), then leave out the trials whose return is NaN"),
            (best_mean(finals[clean_configs]), "you left out the whole config of an errored "
             "trial; leave out only that trial: its config's other seeds still count"),
        ]
    if not ran_all.all():
        mistakes.append((best_mean(final_returns(df[ran_all], varied)), "trials stopped early (by "
                         "a scheduler or a stopper) still count, with their last reported return: "
                         "keep every trial, not only those that ran every iteration"))
    return mistakes


def _same(answer: Any, expected: dict[str, Any]) -> bool:
    if not isinstance(answer, dict) or set(answer) != set(expected):
        return False
    return all(np.isclose(float(answer[k]), float(v)) for k, v in expected.items())


def _judged(seed: int) -> Iterator[tuple[tuple, list[tuple[dict, str]]]]:
    """Each sweep as `narrowed` reads it: (arguments, each mistake's pick and hint)."""
    for _, df, varied in checker_cases(seed):
        yield (df.copy(), list(varied)), _mistakes(df, list(varied))


@exercise("pick_best_config", stub="pick_best_config",
          fallback="rlcourse's reference_pick_best_config",
          reference=lambda fn, seed=0: reference_pick_best_config)
def check_pick_best_config(pick_best_config: Callable, seed: int = 0) -> Callable:
    """`pick_best_config(df, varied)` must return {column: value} of the config whose seeds have
    the best mean last reported return, on each of the checker's sweeps. Returns the function."""
    for what, df, varied in checker_cases(seed):
        answer = call(pick_best_config, df.copy(), list(varied), where=f"on the sweep with {what}")
        expected = reference_pick_best_config(df, varied)
        if not isinstance(answer, dict):
            raise ExerciseError(f"Return the config as a dict {{column: value}}, e.g. "
                                f"{ {k: '...' for k in varied} }, not {type(answer).__name__}.")
        if set(answer) != set(varied):
            raise ExerciseError(f"On the sweep with {what} the varied columns are {varied}: return "
                                f"one value for each (you returned the keys {sorted(answer)}).")
        answer = {k: number(v, f"On the sweep with {what}, your value for {k!r}", " (A column "
                            "of rows? Take the one value: .iloc[0].)") for k, v in answer.items()}
        if _same(answer, expected):
            continue
        hints = [hint for config, hint in _mistakes(df, list(varied)) if _same(answer, config)]
        if len(hints) > 1:
            hints = narrowed(hints, pick_best_config, _judged(seed), _same)
        if hints:
            raise ExerciseError(f"On the sweep with {what} you picked {answer}. Perhaps: "
                                + "; or: ".join(hints) + ".")
        raise ExerciseError(f"On the sweep with {what} you picked {answer}, which is not the config "
                            "with the best mean over its seeds of their last reported returns.")
    passed("on every sweep (a lucky seed, an early peak, a slow start, errored trials, trials "
           "stopped early among shuffled rows, a seed far above its config's others, two varied "
           "settings) you picked the config whose seeds end best on average.")
    return pick_best_config
