"""Learning curves at a fixed env-step budget (lesson 03): train until `env_steps` were sampled,
recording one metric per iteration, so runs that differ in one setting compare fairly.
"""

from typing import Any

import matplotlib.pyplot as plt
import numpy as np


def budget_curve(algo: Any, env_steps: int, metric: str = "episode_return_mean",
                 progress: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """(env steps sampled, result["env_runners"][metric]) after each `algo.train()`, until `algo`
    has sampled `env_steps`. `progress` (an IPython display handle) shows each iteration."""
    steps, values = [], []
    while not steps or steps[-1] < env_steps:
        result = algo.train()
        steps.append(result["num_env_steps_sampled_lifetime"])
        values.append(result["env_runners"].get(metric, np.nan))
        if progress is not None:
            progress.update(f"{steps[-1]:6d} env steps | {metric} {values[-1]:5.2f}")
    return np.asarray(steps), np.asarray(values, dtype=float)


def plot_budget_curves(ax: Any, curves: dict[str, tuple[np.ndarray, np.ndarray]], title: str,
                       baseline: float | None = None, ylabel: str = "return of the env's rewards"
                       ) -> None:
    """One line per run, return against env steps; `baseline` (a random policy's) dashed."""
    for label, (steps, values) in curves.items():
        ax.plot(steps, values, marker="o", markersize=3, label=label)
    if baseline is not None:
        ax.axhline(baseline, color="gray", linestyle="--", label="random policy")
    ax.set_xlabel("env steps sampled")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)


def show_budget_curves(panels: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]],
                       baseline: float | None = None) -> None:
    """Side-by-side panels of `plot_budget_curves`, keyed by title."""
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 3.6), squeeze=False)
    for ax, (title, curves) in zip(axes[0], panels.items(), strict=True):
        plot_budget_curves(ax, curves, title, baseline)
    fig.tight_layout()
    plt.show()
