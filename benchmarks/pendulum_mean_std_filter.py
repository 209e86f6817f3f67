"""PPO on Pendulum-v1 with and without MeanStdFilter: env steps and wall time to a return of -300.

Both runs use tuned_examples/ppo/pendulum_ppo.py's settings (RLlib's Pendulum PPO example) and the
same seed; the filtered run adds `env_runners(env_to_module_connector=lambda env: MeanStdFilter())`.
The unfiltered run is the baseline, measured in the same process on the same machine.

    python benchmarks/pendulum_mean_std_filter.py [--seeds 0] [--runners 2] [--max-env-steps 400000]
"""

import argparse
import sys

from common import print_table
from pass_mark import solve

TARGET_RETURN = -300.0


def make_config(seed: int, mean_std_filter: bool):
    from rlcourse.connectors.env_to_module import MeanStdFilter
    from rlcourse.course.tuned_example import load_tuned_example
    from rlcourse.course.tuned_examples_suite import TUNED_EXAMPLES

    config = load_tuned_example(TUNED_EXAMPLES / "ppo" / "pendulum_ppo.py").config
    config = config.debugging(seed=seed)
    if mean_std_filter:
        config = config.env_runners(env_to_module_connector=lambda env: MeanStdFilter())
    return config


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--runners", type=int, default=2)
    parser.add_argument("--max-env-steps", type=int, default=400_000)
    args = parser.parse_args()
    if args.runners:
        from rlcourse.utils.resources import init_ray
        init_ray(num_cpus=2)
    rows = []
    for seed in args.seeds:
        runs = {}
        for name, flag in (("no filter", False), ("MeanStdFilter", True)):
            r = runs[name] = solve(lambda s, f=flag: make_config(s, f), seed, args.runners,
                                   TARGET_RETURN, args.max_env_steps)
            # Each run takes minutes: say how it ended before the table.
            print(f"{name}, seed {seed}: {r['return']:.1f} at {r['env_steps']:,} env steps, "
                  f"{r['seconds']:.1f} s", file=sys.stderr, flush=True)
        base = runs["no filter"]
        for name, r in runs.items():
            rows.append([f"{name}, seed {seed}", "yes" if r["solved"] else "no",
                         f"{r['env_steps']:,}", f"{r['seconds']:.1f}", f"{r['return']:.1f}",
                         f"{r['seconds'] / base['seconds']:.2f}"])
    print_table(f"PPO on Pendulum-v1 to episode_return_mean >= {TARGET_RETURN:g}, "
                f"{args.runners} remote runners", ["run", "solved", "env steps", "seconds",
                                                    "final return", "time / no filter"], rows)
