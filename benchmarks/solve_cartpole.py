"""Time to solve CartPole-v1 with PPO (or IMPALA) and remote runners, from `ray.init` on.

What is measured: for each seed, a fresh Python process starts Ray (2 CPUs, no dashboard), builds
the course's CartPole config (tuned_examples/<algo>/cartpole_<algo>.py; the algorithms' own defaults
are RLlib's, for big runs) with `.env_runners(num_env_runners=R, num_cpus_per_env_runner=0.5,
num_envs_per_env_runner=4).debugging(seed=s)` and calls `train()` until
result["env_runners"]["episode_return_mean"] >= 450 (the mean of the last 100 episodes), or until
`--time-limit` seconds. "time to solve" runs from just before `ray.init` to that result; "process"
is the whole child process as the parent sees it (interpreter start, imports, `ray.shutdown`);
"start-up" is the part of "time to solve" spent in `ray.init` and `build_algo()`.
A fresh process per seed makes every run pay for `ray.init` and the first torch import, as a
learner does in a fresh notebook kernel.

Goal: median time to solve <= 20 s for PPO, <= 60 s for IMPALA. With `--tuned-example FILE` the
config is the tuned example's (its runners and settings, the seed replaced), and the goal for
tuned_examples/ppo/cartpole_ppo.py is <= 15 s (issue 14), median of 5 seeds.

    python benchmarks/solve_cartpole.py [--algo ppo|impala] [--seeds 0 1 2] [--runners 2]
                                        [--time-limit 120] [--tuned-example FILE]
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time

from common import course_cartpole_config, goal, median, print_table

TARGET_RETURN = 450.0
GOAL_S = {"ppo": 20.0, "impala": 60.0}
TUNED_EXAMPLE_GOAL_S = 15.0
ALGOS = ("impala", "ppo")
ENVS_PER_RUNNER = 4


def solve(algo_name: str, seed: int, runners: int, time_limit: float,
          tuned_example: str | None = None) -> dict:
    """Train until the target return (or the time limit) in this process; return the figures."""
    start = time.perf_counter()
    import ray  # imported here: the child's clock starts before Ray and rlcourse are loaded

    from rlcourse.utils.resources import init_ray

    init_ray(num_cpus=2)
    if tuned_example:
        from rlcourse.course.tuned_example import load_tuned_example
        config = load_tuned_example(tuned_example).config.debugging(seed=seed)
    else:
        config = (course_cartpole_config(algo_name)
                  .env_runners(num_env_runners=runners, num_cpus_per_env_runner=0.5,
                               num_envs_per_env_runner=ENVS_PER_RUNNER)
                  .debugging(seed=seed))
    algo = config.build_algo()
    startup_seconds = time.perf_counter() - start
    try:
        while True:
            result = algo.train()
            episode_return = result["env_runners"]["episode_return_mean"]
            seconds = time.perf_counter() - start
            if episode_return >= TARGET_RETURN or seconds > time_limit:
                break
    finally:
        algo.stop()
        ray.shutdown()
    return {"seed": seed, "solved": episode_return >= TARGET_RETURN, "seconds": seconds,
            "startup_seconds": startup_seconds, "iterations": result["training_iteration"],
            "env_steps": result["num_env_steps_sampled_lifetime"], "return": episode_return}


def run_child(algo_name: str, seed: int, runners: int, time_limit: float,
              tuned_example: str | None = None) -> tuple[dict | None, float, str]:
    """Run `solve` in a fresh process; return its figures (None on failure), wall time, and stderr."""
    command = [sys.executable, __file__, "--child", "--algo", algo_name, "--seeds", str(seed),
               "--runners", str(runners), "--time-limit", str(time_limit)]
    command += ["--tuned-example", tuned_example] if tuned_example else []
    start = time.perf_counter()
    # A session of its own, so that on a timeout the child and every process it started (Ray's
    # GCS, raylet, workers) can be ended together by the process-group id.
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        stdout, stderr = child.communicate(timeout=time_limit + 60)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        stdout, stderr = child.communicate()
    except BaseException:  # e.g. Ctrl-C, which the child's own session does not receive
        os.killpg(child.pid, signal.SIGKILL)
        raise
    wall = time.perf_counter() - start
    lines = stdout.strip().splitlines()
    figures = json.loads(lines[-1]) if child.returncode == 0 and lines else None
    return figures, wall, stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algo", choices=sorted(ALGOS), default="ppo")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--runners", type=int, default=2, help="remote EnvRunner actors")
    parser.add_argument("--time-limit", type=float, default=120.0, help="seconds per seed")
    parser.add_argument("--tuned-example", help="train this tuned example's config instead")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:  # one seed, in this process; the parent reads the JSON line
        print(json.dumps(solve(args.algo, args.seeds[0], args.runners, args.time_limit,
                               args.tuned_example)))
        return

    rows, times = [], []
    for seed in args.seeds:
        figures, wall, stderr = run_child(args.algo, seed, args.runners, args.time_limit,
                                          args.tuned_example)
        if figures is None:
            print(f"seed {seed}: the run failed after {wall:.1f} s; its stderr ends with:\n"
                  + "\n".join(stderr.strip().splitlines()[-15:]), file=sys.stderr)
            rows.append([seed, "failed", "", "", "", "", "", f"{wall:.1f}"])
            times.append(float("inf"))
            continue
        # An unsolved run counts as taking forever, so it can only raise the median.
        times.append(figures["seconds"] if figures["solved"] else float("inf"))
        rows.append([seed, "yes" if figures["solved"] else "no",
                     f"{figures['seconds']:.1f}", f"{figures['startup_seconds']:.1f}",
                     figures["iterations"], f"{figures['env_steps']:,}", f"{figures['return']:.1f}",
                     f"{wall:.1f}"])

    median_s = median(times)
    rows.append(["median", "", f"{median_s:.1f}", "", "", "", "", ""])
    setup = (f"the tuned example {args.tuned_example}" if args.tuned_example else
             f"{args.runners} runners x {ENVS_PER_RUNNER} envs, 0.5 CPU each")
    print_table(f"{args.algo.upper()} on CartPole-v1 to episode_return_mean >= {TARGET_RETURN:g}: "
                f"{setup}, Ray with 2 CPUs",
                ["seed", "solved", "time to solve s", "of which start-up s", "iterations", "env steps",
                 "final return", "process s"], rows)
    goal_s = TUNED_EXAMPLE_GOAL_S if args.tuned_example else GOAL_S[args.algo]
    print(f"Goal: median time to solve <= {goal_s:g} s: {goal(median_s <= goal_s)} "
          f"({median_s:.1f} s).")


if __name__ == "__main__":
    main()
