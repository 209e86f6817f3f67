"""Lesson 07's pictures and small readings of a Ray Tune ResultGrid (no Tune import here).

Every plot takes a ResultGrid (any iterable of results with `.metrics_dataframe` and `.config`) or
dataframes, draws one idea, and shows it (`show=True`, for notebooks) or returns the figure
(`show=False`, for tests). Curves come from each trial's `metrics_dataframe`: one row per reported
iteration, with the trial's settings as `config/...` columns.
"""

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from rlcourse.course.diagrams import finish

RETURN = "env_runners/episode_return_mean"


def all_iterations(results: Iterable[Any]) -> pd.DataFrame:
    """Every reported iteration of every trial, one dataframe (trial_id, config/..., metrics)."""
    frames = [r.metrics_dataframe for r in results if r.metrics_dataframe is not None]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _label(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def trial_curves(results: Iterable[Any], color_by: str = "config/lr", metric: str = RETURN,
                 title: str = "", highlight_seed: Any = None, show: bool = True) -> Figure | None:
    """Each trial's `metric` over its iterations, one colour per value of `color_by`; with
    `highlight_seed`, that seed's curves are drawn thick (what one run alone would have shown)."""
    fig, ax = plt.subplots(figsize=(8, 4))
    frames = [r.metrics_dataframe for r in results if r.metrics_dataframe is not None]
    values = sorted({f[color_by].iloc[0] for f in frames if not f.empty})
    colors = dict(zip(values, plt.cm.viridis(np.linspace(0, 0.85, max(len(values), 1))), strict=False))
    seen = set()
    for f in frames:
        if f.empty:
            continue
        value = f[color_by].iloc[0]
        thick = highlight_seed is not None and f["config/seed"].iloc[0] == highlight_seed
        label = f"{color_by.removeprefix('config/')}={_label(value)}" if value not in seen else None
        seen.add(value)
        ax.plot(f["training_iteration"], f[metric], color=colors[value], lw=3 if thick else 1.2,
                alpha=1 if thick or highlight_seed is None else 0.6, label=label)
    ax.set_xlabel("training iteration")
    ax.set_ylabel(metric.rpartition("/")[2])
    ax.set_title(title or f"{len(frames)} trials")
    ax.legend(fontsize=8)
    return finish(fig, show)


def final_returns_by_seed(df: pd.DataFrame, group_by: str = "config/lr", metric: str = RETURN,
                          show: bool = True) -> Figure | None:
    """The last reported return of each trial (a dot per seed) and the mean per config (a bar)."""
    fig, ax = plt.subplots(figsize=(6, 3.5))
    groups = sorted(df[group_by].unique())
    for i, value in enumerate(groups):
        scores = df.loc[df[group_by] == value, metric].dropna()
        ax.bar(i, scores.mean(), color="#e6eefc", edgecolor="#4a6fa5", width=0.6)
        ax.scatter(np.full(len(scores), i) + np.linspace(-0.15, 0.15, len(scores)), scores,
                   color="#4a6fa5", zorder=3)
    ax.set_xticks(range(len(groups)), [_label(v) for v in groups])
    ax.set_xlabel(group_by.removeprefix("config/"))
    ax.set_ylabel(f"final {metric.rpartition('/')[2]}")
    ax.set_title("bars: mean over seeds; dots: one seed each")
    return finish(fig, show)


def asha_curves(results: Iterable[Any], max_t: int, metric: str = RETURN,
                show: bool = True) -> Figure | None:
    """Each trial's curve under ASHA; a cross where ASHA stopped it before `max_t` iterations."""
    fig, ax = plt.subplots(figsize=(8, 4))
    for r in results:
        f = r.metrics_dataframe
        if f is None or f.empty:
            continue
        line, = ax.plot(f["training_iteration"], f[metric], lw=1.4,
                        label=f"lr={_label(f['config/lr'].iloc[0])}")
        if f["training_iteration"].iloc[-1] < max_t:
            ax.scatter(f["training_iteration"].iloc[-1], f[metric].iloc[-1], marker="x", s=80,
                       color=line.get_color(), zorder=3)
    ax.axvline(max_t, color="grey", ls=":", lw=1)
    ax.set_xlabel("training iteration")
    ax.set_ylabel(metric.rpartition("/")[2])
    ax.set_title("ASHA: x = stopped early")
    ax.legend(fontsize=8)
    return finish(fig, show)


def pbt_exploits(experiment_path: str | Path) -> list[dict[str, Any]]:
    """PBT's exploits from its log `pbt_global.txt`: which trial copied which, at which iteration,
    and the lr it went on with."""
    path = Path(experiment_path) / "pbt_global.txt"
    exploits = []
    for line in path.read_text().splitlines() if path.is_file() else []:
        target, donor, target_time, donor_time, _old, new = json.loads(line)
        exploits.append({"trial": target, "copied": donor, "at": target_time,
                         "donor_at": donor_time, "new_lr": new["lr"]})
    return exploits


# the lr the learner's optimizer used in that iteration (RLlib's key)
LR = "learners/default_policy/default_optimizer_learning_rate"


def pbt_history(result: Any) -> pd.DataFrame:
    """A PBT trial's every reported iteration, with its lr in column "lr". Read from the trial's
    `progress.csv`, which keeps every row; with paused and restored trials, `metrics_dataframe`
    (read from result.json) was seen to miss rows in this course's runs."""
    path = Path(result.path) / "progress.csv"
    f = pd.read_csv(path) if path.is_file() else result.metrics_dataframe
    return f.assign(lr=f[LR] if LR in f else f["config/lr"])


def _segments(f: pd.DataFrame) -> list[pd.DataFrame]:
    """A PBT trial's history cut where it exploited: its lr changed, or its iteration count went
    back (it went on from the donor's checkpoint, at the donor's iteration)."""
    cut = (f["lr"].ne(f["lr"].shift()) | f["training_iteration"].diff().le(0))
    cut.iloc[0] = False
    starts = [0, *np.flatnonzero(cut.to_numpy()), len(f)]
    return [f.iloc[a:b] for a, b in zip(starts[:-1], starts[1:], strict=True)]


def pbt_schedule(results: Iterable[Any], metric: str = RETURN, show: bool = True) -> Figure | None:
    """PBT's schedule: each trial's lr over its iterations (top) and its return (bottom); a star
    where a trial exploited (went on from a better trial's checkpoint) and explored (perturbed that
    trial's lr). What a trial did before its last exploit is drawn faint and dashed."""
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 5.5), sharex=True)
    for i, r in enumerate(results):
        f = pbt_history(r)
        if f.empty:
            continue
        color = plt.cm.tab10(i % 10)
        segments = _segments(f.reset_index(drop=True))
        for k, seg in enumerate(segments):
            last = k == len(segments) - 1
            style = dict(color=color, lw=1.8 if last else 1.0, ls="-" if last else "--",
                         alpha=1 if last else 0.45)
            label = f"trial {f['trial_id'].iloc[0].rpartition('_')[2]}" if last else None
            top.step(seg["training_iteration"], seg["lr"], where="post", label=label, **style)
            bottom.plot(seg["training_iteration"], seg[metric], **style)
            if k > 0:
                top.scatter(seg["training_iteration"].iloc[0], seg["lr"].iloc[0], marker="*",
                            s=160, color=color, edgecolor="black", zorder=3)
    top.set_yscale("log")
    top.set_ylabel("lr")
    top.set_title("PBT: lr of each trial (star = exploit, then explore; dashed = abandoned)")
    top.legend(fontsize=8, ncol=4)
    bottom.set_xlabel("training iteration")
    bottom.set_ylabel(metric.rpartition("/")[2])
    return finish(fig, show)
