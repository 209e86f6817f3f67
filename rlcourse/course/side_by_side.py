"""The same experiment in rlcourse and in RLlib, with only the import changed (lesson 15).

A learner writes a config-building function once, naming the classes it needs as its parameters
(`def ppo_cartpole(PPOConfig): return PPOConfig().environment(...)...`). `run(ppo_cartpole,
"ray.rllib")` imports those names from RLlib, `run(ppo_cartpole, "rlcourse")` from rlcourse, builds
the algorithm and trains it to a return target or a budget, recording (env steps, wall seconds,
return) per iteration. `program(fn, package)` is the code a learner would write for one package, and
`code_diff(fn)` shows that the two programs differ in their imports only.
"""

import difflib
import importlib
import inspect
import math
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rlcourse.utils.resources import init_ray

# Where each name a config function may ask for lives, per package.
NAMES: dict[str, dict[str, str]] = {
    "rlcourse": {"PPOConfig": "rlcourse", "IMPALAConfig": "rlcourse", "APPOConfig": "rlcourse",
                 "register_env": "rlcourse",
                 "FlattenObservations": "rlcourse.connectors.env_to_module",
                 "MeanStdFilter": "rlcourse.connectors.env_to_module",
                 "StatelessCartPole": "rlcourse.course.envs"},
    "ray.rllib": {"PPOConfig": "ray.rllib.algorithms.ppo",
                  "IMPALAConfig": "ray.rllib.algorithms.impala",
                  "APPOConfig": "ray.rllib.algorithms.appo",
                  "register_env": "ray.tune.registry",
                  "FlattenObservations": "ray.rllib.connectors.env_to_module",
                  "MeanStdFilter": "ray.rllib.connectors.env_to_module",
                  "StatelessCartPole": "ray.rllib.examples.envs.classes.stateless_cartpole"},
}
PACKAGES = tuple(NAMES)
NO_SUCH_SETTING = "(no such setting)"


@dataclass
class Run:
    """One training run: per iteration the env steps so far, wall seconds since the build started
    (building included) and the mean return of recent episodes (NaN before the first episode ends)."""

    package: str
    rows: np.ndarray  # shape (iterations, 3): env steps, seconds, return
    build_seconds: float
    last_result: dict[str, Any] = field(repr=False)

    @property
    def env_steps(self) -> np.ndarray:
        return self.rows[:, 0]

    @property
    def seconds(self) -> np.ndarray:
        return self.rows[:, 1]

    @property
    def returns(self) -> np.ndarray:
        return self.rows[:, 2]

    def first_reaching(self, target: float) -> tuple[int, float] | None:
        """(env steps, wall seconds) when this run's return first reached `target`, or None."""
        return first_reaching(self.rows, target)


def first_reaching(rows: np.ndarray, target: float) -> tuple[int, float] | None:
    """(env steps, wall seconds) of the first row (env steps, seconds, return) whose return is at
    least `target`; None if none is. NaN returns (no episode finished yet) never count."""
    reached = np.flatnonzero(np.nan_to_num(rows[:, 2], nan=-np.inf) >= target)
    if not len(reached):
        return None
    return int(rows[reached[0], 0]), float(rows[reached[0], 1])


def check_package(package: str) -> str:
    """`package` if it is one side_by_side runs on ("rlcourse" or "ray.rllib"); else a ValueError."""
    if package not in NAMES:
        raise ValueError(f"package must be one of {list(PACKAGES)}, got {package!r}: the same config "
                         "function runs on rlcourse or on RLlib ('ray.rllib').")
    return package


def _wanted_names(build_config: Callable) -> list[str]:
    """The names `build_config` takes as parameters; each must be one the packages both have."""
    names = list(inspect.signature(build_config).parameters)
    unknown = [name for name in names if name not in NAMES["rlcourse"]]
    if unknown:
        raise ValueError(f"{build_config.__name__} takes {unknown}, which side_by_side cannot "
                         f"import; its parameters may be {sorted(NAMES['rlcourse'])}.")
    return names


def imports(build_config: Callable, package: str) -> dict[str, Any]:
    """The objects `build_config` asks for, imported from `package`."""
    check_package(package)
    return {name: getattr(importlib.import_module(NAMES[package][name]), name)
            for name in _wanted_names(build_config)}


def import_lines(build_config: Callable, package: str) -> list[str]:
    """The import statements a learner writes for `build_config` on `package`, one per module."""
    check_package(package)
    modules: dict[str, list[str]] = {}
    for name in _wanted_names(build_config):
        modules.setdefault(NAMES[package][name], []).append(name)
    return [f"from {module} import {', '.join(names)}" for module, names in modules.items()]


def program(build_config: Callable, package: str) -> str:
    """The code a learner writes for `package`: its imports, then the config function as it is."""
    source = textwrap.dedent(inspect.getsource(build_config))
    return "\n".join(import_lines(build_config, package)) + "\n\n\n" + source


def code_diff(build_config: Callable) -> list[str]:
    """The unified diff from rlcourse's program to RLlib's (lines starting with -, + or space)."""
    return list(difflib.unified_diff(
        program(build_config, "rlcourse").splitlines(), program(build_config, "ray.rllib").splitlines(),
        "rlcourse", "ray.rllib", lineterm="", n=2))


def diff_markdown(build_config: Callable) -> str:
    """`code_diff` as a Markdown diff block, for IPython.display.Markdown."""
    return "```diff\n" + "\n".join(code_diff(build_config)) + "\n```"


def defaults(class_name: str, settings: list[str]) -> list[tuple[str, Any, Any]]:
    """(setting, rlcourse's default, RLlib's default) of `class_name`'s settings (e.g. "PPOConfig"),
    read from fresh configs of both libraries: what a config that leaves them out would train with.
    A setting one library does not have reads NO_SUCH_SETTING."""
    configs = {package: getattr(importlib.import_module(NAMES[package][class_name]), class_name)()
               for package in PACKAGES}
    return [(name, *(getattr(configs[package], name, NO_SUCH_SETTING) for package in PACKAGES))
            for name in settings]


def episode_return(result: dict) -> float:
    """The mean return of recent episodes, a result key both libraries share (NaN before any ends)."""
    value = result.get("env_runners", {}).get("episode_return_mean")
    return math.nan if value is None else float(value)


def env_steps_sampled(result: dict) -> int:
    """Env steps sampled since the build, a top-level result key in both libraries."""
    return int(result["num_env_steps_sampled_lifetime"])


def run(build_config: Callable, package: str, *, target_return: float | None = None,
        max_env_steps: int | None = None, max_seconds: float | None = None,
        progress: Callable[[str], None] | None = print) -> Run:
    """Build `build_config`'s algorithm from `package` and train until the mean return reaches
    `target_return` or a budget (env steps, wall seconds) is spent; return every iteration's figures.

    Ray is started with `init_ray()` (small, loopback, no dashboard) if it is not running, before the
    clock starts, and left running for the next run; the algorithm is stopped in any case.
    """
    if target_return is None and max_env_steps is None and max_seconds is None:
        raise ValueError("give a target_return, max_env_steps or max_seconds: else the run never ends")
    objects = imports(build_config, package)
    init_ray()
    start = time.perf_counter()
    algo = build_config(**objects).build_algo()
    build_seconds = time.perf_counter() - start
    rows = []
    try:
        while True:
            result = algo.train()
            rows.append((env_steps_sampled(result), time.perf_counter() - start,
                         episode_return(result)))
            steps, seconds, mean_return = rows[-1]
            if progress is not None:
                progress(f"{package:>9}: iteration {len(rows):3d} | {steps:7,d} env steps | "
                         f"{seconds:6.1f} s | return {mean_return:7.2f}")
            if ((target_return is not None and mean_return >= target_return)
                    or (max_env_steps is not None and steps >= max_env_steps)
                    or (max_seconds is not None and seconds >= max_seconds)):
                break
    finally:
        algo.stop()
    return Run(package, np.array(rows, dtype=float), build_seconds, result)


def plot_runs(runs: list[Run], target: float | None = None, title: str = "") -> None:
    """Both learning curves, against env steps (left) and against wall seconds (right)."""
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(10, 3.4), sharey=True)
    for one in runs:
        label = "rlcourse" if one.package == "rlcourse" else "RLlib"
        axes[0].plot(one.env_steps, one.returns, marker=".", label=label)
        axes[1].plot(one.seconds, one.returns, marker=".", label=label)
    for axis, xlabel in zip(axes, ("env steps sampled", "wall seconds (build included)"), strict=True):
        if target is not None:
            axis.axhline(target, color="grey", linestyle="--", linewidth=1)
        axis.set_xlabel(xlabel)
        axis.grid(alpha=0.3)
    axes[0].set_ylabel("mean episode return")
    axes[0].legend()
    figure.suptitle(title)
    figure.tight_layout()
    plt.show()
