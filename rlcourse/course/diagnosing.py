"""Lesson 11's runs: PPO on CartPole recorded as a table of the metrics RLlib's PPO reports, one row
per training iteration, so that a broken run can be read beside a healthy one.

`record(config, env_steps)` trains until `env_steps` env steps and returns the results flattened as
Ray Tune flattens them (`learners/default_policy/entropy`), the columns of Tune's progress.csv;
`compare` plots runs against env steps; `late` and `summary` reduce a run to numbers.
`BUGS` names the broken runs the lesson shows and `break_config` makes one; the exercise's runs
(`mystery_runs`) use them.
"""

from collections.abc import Callable
from typing import Any, NamedTuple

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
from matplotlib.figure import Figure

from rlcourse.algorithms.algorithm import Algorithm
from rlcourse.algorithms.algorithm_config import AlgorithmConfig
from rlcourse.connectors.env_to_module import MeanStdFilter
from rlcourse.course.diagnosing_envs import broken_cartpole

STEPS = "num_env_steps_sampled_lifetime"
LEARNER = "learners/default_policy/"
# Short names for the columns the lesson reads, and what each one says.
METRICS = {
    "return": ("env_runners/episode_return_mean", "mean return of the last 100 episodes (smoothed)"),
    "episode_len": ("env_runners/episode_len_mean", "mean length of the same episodes"),
    "eval_return": ("evaluation/env_runners/episode_return_mean",
                    "return of the greedy policy, on episodes of its own"),
    "entropy": (LEARNER + "entropy", "how random the policy still is (ln 2 = 0.69: a coin flip)"),
    "kl": (LEARNER + "mean_kl_loss", "KL(old || new): how far one update moved the policy"),
    "kl_coeff": (LEARNER + "curr_kl_coeff", "the KL penalty's weight, adapted towards kl_target"),
    "policy_loss": (LEARNER + "policy_loss", "minus the clipped surrogate (advantages are "
                    "normalized: stays near 0)"),
    "vf_loss": (LEARNER + "vf_loss", "squared value error, each sample's clipped at vf_clip_param"),
    "vf_loss_unclipped": (LEARNER + "vf_loss_unclipped", "the same without the clip"),
    "vf_explained_var": (LEARNER + "vf_explained_var", "1 - Var(target - V) / Var(target): 1 = "
                         "the critic predicts the targets, 0 = no better than their mean"),
    "grad_norm": (LEARNER + "gradients_default_optimizer_global_norm",
                  "the gradient's norm before clipping at grad_clip"),
}
TIME_LIMIT = 100  # the truncation bug's CartPole: a limit a learning policy reaches in ~10k steps
START_VALUE = "start_state_value"  # a column `record` adds: the critic's V(s_0), see start_value


class Bug(NamedTuple):
    what: str  # what was broken, in a line
    apply: Callable[[AlgorithmConfig], AlgorithmConfig]  # the healthy config -> the broken one


def _env(**env_config: Any) -> Callable[[AlgorithmConfig], AlgorithmConfig]:
    """A bug put into the env: CartPole made by `broken_cartpole` with `env_config` added."""
    def apply(config: AlgorithmConfig) -> AlgorithmConfig:
        kept = config.env_config if config.env is broken_cartpole else {}
        return config.environment(broken_cartpole, env_config={**kept, **env_config})
    return apply


BUGS = {
    "lr_too_high": Bug("lr=0.1, 30x the healthy 3e-3", lambda c: c.training(lr=0.1)),
    "value_loss_clipped": Bug("vf_clip_param=10 (RLlib's default) instead of 1000",
                              lambda c: c.training(vf_clip_param=10.0)),
    "no_bootstrap_at_truncation": Bug("a 100-step time limit reported as a termination (done = "
                                      "terminated or truncated)",
                                      _env(max_episode_steps=TIME_LIMIT,
                                           truncation_as_termination=True)),
    "unnormalized_observations": Bug("the cart observed in millimetres from the track's left end",
                                     _env(sensor_units=True)),
    "reward_scale_too_large": Bug("every reward x100", _env(reward_scale=100.0)),
    "too_few_env_steps_per_update": Bug("64 env steps per update instead of 1000",
                                        lambda c: c.training(train_batch_size_per_learner=64,
                                                             minibatch_size=64)),
}


def break_config(config: AlgorithmConfig, bug: str) -> AlgorithmConfig:
    """A copy of `config` with `bug` (a key of BUGS) put in."""
    if bug not in BUGS:
        raise KeyError(f"No bug named {bug!r}; the bugs are {sorted(BUGS)}.")
    return BUGS[bug].apply(config.copy())


def normalize_observations(config: AlgorithmConfig) -> AlgorithmConfig:
    """`config` with a MeanStdFilter between the env and the module, as RLlib spells it."""
    return config.copy().env_runners(env_to_module_connector=lambda env: MeanStdFilter())


def flatten(result: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested result as Tune flattens it: {"learners/default_policy/entropy": ...}."""
    flat = {}
    for key, value in result.items():
        if isinstance(value, dict):
            flat.update(flatten(value, f"{prefix}{key}/"))
        else:
            flat[prefix + key] = value
    return flat


def start_value(algo: Algorithm, n: int = 256) -> float:
    """The critic's mean V(s_0) over `n` of CartPole's start states (each element uniform in
    +-0.05), the same states each time. For a module that sees raw observations (no connector)."""
    starts = np.random.default_rng(0).uniform(-0.05, 0.05, (n, 4)).astype(np.float32)
    module = algo.get_module()
    with torch.no_grad():
        return float(module.compute_values({"obs": torch.as_tensor(starts)}).mean())


def record(config: AlgorithmConfig, env_steps: int, probe_start_value: bool = False
           ) -> pd.DataFrame:
    """Train `config` until `env_steps` env steps; one row of flattened results per iteration
    (plus the critic's V(s_0) when `probe_start_value`)."""
    rows = []
    with config.build_algo() as algo:
        while not rows or rows[-1][STEPS] < env_steps:
            row = flatten(algo.train())
            if probe_start_value:
                row[START_VALUE] = start_value(algo)
            rows.append(row)
    return pd.DataFrame(rows)


def column(run: pd.DataFrame, metric: str) -> pd.Series:
    """A run's column by short name (METRICS) or by its flattened key."""
    key = METRICS[metric][0] if metric in METRICS else metric
    if key not in run:
        raise KeyError(f"this run has no {key!r}; its columns include {sorted(run.columns)[:8]}...")
    return run[key]


def late(run: pd.DataFrame, metric: str, fraction: float = 0.5) -> float:
    """The mean of `metric` over the last `fraction` of the run's iterations (NaN ignored)."""
    values = column(run, metric).to_numpy(dtype=float)
    return float(np.nanmean(values[int(len(values) * (1 - fraction)):]))


def summary(runs: dict[str, pd.DataFrame], stats: dict[str, Callable[[pd.DataFrame], float]]
            ) -> pd.DataFrame:
    """A table: one row per run, one column per statistic ({name: fn(run) -> number})."""
    return pd.DataFrame({name: {stat: fn(run) for stat, fn in stats.items()}
                         for name, run in runs.items()}).T


def compare(runs: dict[str, pd.DataFrame], metrics: list[str], title: str = "",
            log: tuple[str, ...] = (), show: bool = True) -> Figure | None:
    """One panel per metric, each run a line against env steps (a healthy run: black; `log`: the
    metrics drawn on a log scale)."""
    fig, axes = plt.subplots(1, len(metrics), figsize=(3.6 * len(metrics), 2.9), squeeze=False)
    for ax, metric in zip(axes[0], metrics, strict=True):
        for name, run in runs.items():
            style = {"color": "black", "lw": 2} if name.startswith("healthy") else {"lw": 1.5}
            values = pd.DataFrame({"x": run[STEPS], "y": column(run, metric)}).dropna()
            ax.plot(values["x"], values["y"], label=name, **style)
        ax.set_title(metric, fontsize=10)
        if metric in log:
            ax.set_yscale("log")
        ax.set_xlabel("env steps")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    if not show:
        return fig
    plt.show()
    return None


# The exercise's runs and their bugs (the checker's answer; the lesson shows only the metrics).
MYSTERY = {"A": "reward_scale_too_large", "B": "no_bootstrap_at_truncation",
           "C": "too_few_env_steps_per_update"}


def mystery_runs(config: AlgorithmConfig, env_steps: int, seed: int) -> dict[str, pd.DataFrame]:
    """The exercise's runs A, B and C: `config` with MYSTERY's bugs, on `seed`, each recorded
    with the critic's V(s_0)."""
    return {name: record(break_config(config, bug).debugging(seed=seed), env_steps,
                         probe_start_value=True) for name, bug in MYSTERY.items()}
