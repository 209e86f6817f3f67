"""Lesson 07's plots and ResultGrid readings work on results shaped like Tune's."""

import json
from pathlib import Path
from types import SimpleNamespace

import matplotlib
import pandas as pd
from matplotlib.figure import Figure

from rlcourse.course import tune_plots

matplotlib.use("Agg")
RETURN = tune_plots.RETURN


def result(trial, lrs, returns, iterations=None, seed=0, path="/tmp/x"):
    iterations = iterations or list(range(1, len(returns) + 1))
    df = pd.DataFrame({"trial_id": f"abc_{trial:05d}", "training_iteration": iterations,
                       "config/lr": lrs, "config/seed": seed, RETURN: returns})
    return SimpleNamespace(metrics_dataframe=df, path=f"{path}/PPO_{trial:05d}_{trial}_lr=x_date")


def test_all_iterations_concatenates_every_trial():
    df = tune_plots.all_iterations([result(0, 1e-3, [20, 30]), result(1, 1e-2, [21, 25, 40])])
    assert len(df) == 5 and set(df["trial_id"]) == {"abc_00000", "abc_00001"}


def test_pbt_segments_cut_at_an_exploit():
    # Iterations 1-4 at lr 1e-5, then the trial continues from a donor's iteration 3 at lr 2e-3.
    f = result(0, [1e-5] * 4 + [2e-3] * 3, [20, 21, 22, 22, 40, 45, 50], [1, 2, 3, 4, 4, 5, 6])
    segments = tune_plots._segments(tune_plots.pbt_history(f))
    assert [len(s) for s in segments] == [4, 3]
    assert segments[1]["training_iteration"].iloc[0] == 4


def test_pbt_history_prefers_progress_csv_and_the_learners_lr(tmp_path):
    r = result(0, 1e-3, [20, 30], path=str(tmp_path))
    Path(r.path).mkdir()
    pd.DataFrame({"training_iteration": [1, 2, 3], RETURN: [20, 30, 35],
                  tune_plots.LR: [1e-3, 1e-3, 2e-3]}).to_csv(Path(r.path) / "progress.csv")
    history = tune_plots.pbt_history(r)
    assert len(history) == 3 and history["lr"].tolist() == [1e-3, 1e-3, 2e-3]


def test_pbt_exploits_reads_tunes_log(tmp_path):
    line = ["0_lr=0.0000", "3_lr=0.0030", 6, 3, {"lr": 3e-3}, {"lr": 3.6e-3}]
    (tmp_path / "pbt_global.txt").write_text(json.dumps(line) + "\n")
    assert tune_plots.pbt_exploits(tmp_path) == [
        {"trial": "0_lr=0.0000", "copied": "3_lr=0.0030", "at": 6, "donor_at": 3, "new_lr": 3.6e-3}]
    assert tune_plots.pbt_exploits(tmp_path / "none") == []


def test_every_plot_draws():
    grid = [result(i, lr, [20, 30 + i, 40 + i], seed=i % 2) for i, lr in enumerate([1e-3, 1e-3, 1e-2])]
    pbt = [result(0, [1e-5] * 3 + [2e-3] * 2, [20, 21, 22, 40, 45], [1, 2, 3, 3, 4]),
           result(1, 2e-3, [20, 30, 40, 50])]
    last = tune_plots.all_iterations(grid).groupby("trial_id").tail(1)
    figures = [tune_plots.trial_curves(grid, highlight_seed=0, show=False),
               tune_plots.final_returns_by_seed(last, show=False),
               tune_plots.asha_curves(grid, max_t=5, show=False),
               tune_plots.pbt_schedule(pbt, show=False)]
    assert all(isinstance(f, Figure) for f in figures)
    stars = [c for c in figures[3].axes[0].collections if len(c.get_offsets())]
    assert len(stars) == 1  # one exploit
