"""The sweep-picking checker accepts right answers and names the typical mistakes."""

import numpy as np
import pytest

from rlcourse.course.exercises import ExerciseError, check_pick_best_config, reference_pick_best_config
from rlcourse.course.exercises.tune import RETURN, checker_cases


def last_rows(df):
    return df.sort_values("training_iteration").groupby("trial_id").tail(1)


def as_dict(varied, value):
    return dict(zip(varied, value if isinstance(value, tuple) else (value,), strict=True))


def max_of_max(df, varied):
    return as_dict(varied, df.groupby(varied)[RETURN].max().idxmax())


def one_lucky_seed(df, varied):
    last = last_rows(df)
    row = last.loc[last[RETURN].idxmax()]
    return {name: row[name] for name in varied}


def mean_of_whole_curve(df, varied):
    return as_dict(varied, df.groupby(varied)[RETURN].mean().idxmax())


def last_row_unsorted(df, varied):
    return as_dict(varied, df.groupby("trial_id").tail(1).groupby(varied)[RETURN].mean().idxmax())


def numpy_mean_with_nan(df, varied):
    last = last_rows(df)
    means = {key: np.mean(group[RETURN].to_numpy()) for key, group in last.groupby(varied)}
    best = max(means, key=lambda k: means[k] if not np.isnan(means[k]) else np.inf)
    return as_dict(varied, best)


def nan_rows_dropped_first(df, varied):  # an errored trial's earlier return counts as its last
    last = last_rows(df.dropna(subset=[RETURN]))
    return as_dict(varied, last.groupby(varied)[RETURN].mean().idxmax())


def groupby_last(df, varied):  # GroupBy.last() skips NaN: an errored trial keeps an earlier return
    last = df.sort_values("training_iteration").groupby("trial_id").last()
    return as_dict(varied, last.groupby(varied)[RETURN].mean().idxmax())


def errored_config_dropped(df, varied):  # the errored trial's seeds all thrown away
    last = last_rows(df)
    clean = last.groupby(varied)[RETURN].transform(lambda x: x.notna().all())
    return as_dict(varied, last[clean].groupby(varied)[RETURN].mean().idxmax())


def errored_counted_as_zero(df, varied):
    last = last_rows(df).fillna({RETURN: 0.0})
    return as_dict(varied, last.groupby(varied)[RETURN].mean().idxmax())


def sum_over_seeds(df, varied):
    last = last_rows(df).dropna(subset=[RETURN])
    return as_dict(varied, last.groupby(varied)[RETURN].sum().idxmax())


def only_trials_that_ran_every_iteration(df, varied):  # early-stopped trials left out
    last = df[df["training_iteration"] == df["training_iteration"].max()]
    return as_dict(varied, last.dropna(subset=[RETURN]).groupby(varied)[RETURN].mean().idxmax())


def first_row_per_trial(df, varied):  # right while the rows come newest first
    first = df.groupby("trial_id").head(1).dropna(subset=[RETURN])
    return as_dict(varied, first.groupby(varied)[RETURN].mean().idxmax())


def lr_only(df, varied):
    return reference_pick_best_config(df, ["config/lr"])


def median_over_seeds(df, varied):  # not what the exercise asks
    last = last_rows(df).dropna(subset=[RETURN])
    return as_dict(varied, last.groupby(varied)[RETURN].median().idxmax())


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_reference_passes(seed, capsys):
    assert check_pick_best_config(reference_pick_best_config, seed=seed) is reference_pick_best_config
    assert "Correct" in capsys.readouterr().out


def test_a_sort_by_trial_iteration_solution_with_idxmax_passes(capsys):
    def pick(df, varied):
        last = df.loc[df.groupby("trial_id")["training_iteration"].idxmax()]
        means = last[last[RETURN].notna()].groupby(varied)[RETURN].mean()
        return as_dict(varied, means.idxmax())

    check_pick_best_config(pick)
    assert "Correct" in capsys.readouterr().out


def columns_of_the_best_rows(df, varied):  # the right rows, but each value a column of them
    best = reference_pick_best_config(df, varied)
    rows = df[(df[list(varied)] == list(best.values())).all(axis=1)]
    return {column: rows[column] for column in varied}


@pytest.mark.parametrize(("answer", "hint"), [
    (max_of_max, "max of the curve"),
    (one_lucky_seed, "one lucky seed"),
    (mean_of_whole_curve, "mean over every iteration"),
    (last_row_unsorted, "sort by training_iteration"),
    (numpy_mean_with_nan, "NaN"),
    (nan_rows_dropped_first, "dropping the NaN rows first"),
    (groupby_last, r"groupby\(...\).last\(\), which skips NaN"),
    (errored_config_dropped, "whole config of an errored trial"),
    (only_trials_that_ran_every_iteration, "stopped early"),
    (first_row_per_trial, "first row"),
    (median_over_seeds, "not the median"),
    (errored_counted_as_zero, "NaN counted as a return of 0"),
    (sum_over_seeds, "a sum over seeds favours the config with more of them"),
    (lr_only, "return one value for each"),
    (lambda df, varied: tuple(reference_pick_best_config(df, varied).values()), "as a dict"),
    (lambda df, varied: {"config/lr": 1e-3}, "(not the config|return one value)"),
    (lambda df, varied: df["no such column"], "raised KeyError"),
    (columns_of_the_best_rows, r"your value for 'config/lr' is a Series.*\.iloc\[0\]"),
], ids=["max-of-max", "lucky-seed", "whole-curve-mean", "unsorted-last-row", "nan-mean",
        "nan-rows-dropped-first", "groupby-last", "errored-config-dropped", "early-stopped-dropped",
        "first-row", "median", "nan-as-zero", "sum", "one-column", "a-tuple", "typed-lr", "raises",
        "columns-not-values"])
def test_each_mistake_is_named(answer, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_pick_best_config(answer)


def test_every_case_has_a_single_clear_best_config():
    for seed in range(4):
        for what, df, varied in checker_cases(seed):
            last = last_rows(df).dropna(subset=[RETURN])
            means = last.groupby(varied)[RETURN].mean().sort_values()
            assert means.iloc[-1] - means.iloc[-2] > 5, (seed, what, means)


def test_the_stub_is_not_attempted(capsys):
    def pick_best_config(df, varied):
        raise NotImplementedError("TODO")

    assert check_pick_best_config(pick_best_config) is reference_pick_best_config
    assert "Not attempted yet" in capsys.readouterr().out


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("answer", [max_of_max, one_lucky_seed, mean_of_whole_curve,
                                    numpy_mean_with_nan, nan_rows_dropped_first, groupby_last,
                                    errored_config_dropped, first_row_per_trial, median_over_seeds,
                                    last_row_unsorted, only_trials_that_ran_every_iteration,
                                    errored_counted_as_zero, sum_over_seeds])
def test_a_mistake_that_other_sweeps_tell_apart_gets_its_one_hint(answer, seed):
    """Where two mistakes pick the same config on the sweep that fails, the learner's picks on the
    other sweeps rule one out: the hint names only the mistake the code makes."""
    with pytest.raises(ExerciseError) as wrong:
        check_pick_best_config(answer, seed=seed)
    assert "Perhaps: " in str(wrong.value) and "; or: " not in str(wrong.value), str(wrong.value)
