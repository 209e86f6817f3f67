"""Training to a pass mark, seed by seed, and the table of it: shared by the off-policy benchmarks
(dqn_cartpole.py, sac_pendulum.py), which differ only in their config and mark.

For each seed, the config is built in this process (its runners as Ray actors with 0.5 CPU each when
`--runners` > 0; Ray then starts once, 2 CPUs, no dashboard) and trained until
result["env_runners"]["episode_return_mean"] reaches the mark or `--max-env-steps`. "time to mark"
runs from just before `build_algo()`. "updates/s" divides the updates by the seconds spent in them
(replay sampling, the step, priority updates); "env steps/s" divides the env steps by the seconds
spent sampling; both leave out the rest of the loop.
"""

import argparse
import time
from collections.abc import Callable
from typing import Any

from common import goal, median, print_table


def solve(make_config: Callable[[int], Any], seed: int, runners: int, target: float,
          max_env_steps: int) -> dict:
    """Train one seed of `make_config(seed)` to `target` (or the step limit); return the figures."""
    start = time.perf_counter()
    config = make_config(seed).env_runners(num_env_runners=runners, num_cpus_per_env_runner=0.5)
    algo = config.build_algo()
    update_s = sample_s = 0.0
    updates = 0
    try:
        while True:
            result = algo.train()
            timers = result["timers"]
            update_s += timers.get("learner_update_timer", 0.0)
            sample_s += timers["env_runner_sampling_timer"]
            updates += result["learners"]["default_policy"].get("num_updates", 0)
            episode_return = result["env_runners"]["episode_return_mean"]
            env_steps = result["num_env_steps_sampled_lifetime"]
            if episode_return >= target or env_steps >= max_env_steps:
                break
    finally:
        algo.stop()
    return {"seed": seed, "solved": episode_return >= target, "env_steps": env_steps,
            "seconds": time.perf_counter() - start, "return": episode_return,
            "updates_per_s": updates / max(update_s, 1e-9),
            "env_steps_per_s": env_steps / max(sample_s, 1e-9)}


def run(description: str, title: str, make_config: Callable[[int], Any], target: float,
        goal_env_steps: int, default_seeds: list[int]) -> None:
    """Parse the command line, train every seed, print the table and the goal line."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--seeds", type=int, nargs="+", default=default_seeds)
    parser.add_argument("--runners", type=int, default=0, help="remote EnvRunner actors")
    parser.add_argument("--max-env-steps", type=int, default=goal_env_steps)
    args = parser.parse_args()
    if args.runners:
        from rlcourse.utils.resources import init_ray
        init_ray(num_cpus=2)

    runs = [solve(make_config, seed, args.runners, target, args.max_env_steps)
            for seed in args.seeds]
    rows = [[r["seed"], "yes" if r["solved"] else "no", f"{r['env_steps']:,}",
             f"{r['seconds']:.1f}", f"{r['return']:.1f}", f"{r['updates_per_s']:.0f}",
             f"{r['env_steps_per_s']:.0f}"] for r in runs]
    # An unsolved run counts as never solving, so it can only raise the medians.
    steps = [r["env_steps"] if r["solved"] else float("inf") for r in runs]
    seconds = [r["seconds"] if r["solved"] else float("inf") for r in runs]
    rows.append(["median", "", f"{median(steps):,.0f}", f"{median(seconds):.1f}", "",
                 f"{median([r['updates_per_s'] for r in runs]):.0f}",
                 f"{median([r['env_steps_per_s'] for r in runs]):.0f}"])
    print_table(f"{title} to episode_return_mean >= {target:g}, {args.runners} remote runners",
                ["seed", "solved", "env steps", f"time to {target:g} s", "final return",
                 "updates/s", "env steps/s"], rows)
    solved_all = all(r["solved"] and r["env_steps"] <= goal_env_steps for r in runs)
    print(f"Goal: every seed reaches {target:g} within {goal_env_steps:,} env steps: "
          f"{goal(solved_all)}.")
