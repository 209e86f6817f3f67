"""APPO to a return of 450 on CartPole-v1: rlcourse beside RLlib 2.60's APPO, in one run.

What is measured: env steps sampled and wall seconds (build included) until `episode_return_mean`
first reaches the target, for
- rlcourse APPO with the course's settings (tuned_examples/appo/cartpole_appo.py),
- rlcourse IMPALA with the course's settings (tuned_examples/impala/cartpole_impala.py),
- RLlib's APPO with RLlib's own tuned example (rllib/tuned_examples/appo/cartpole_appo.py: APPO's
  defaults, vf_loss_coeff 0.05, entropy_coeff 0, shared layers; RLlib imported for real),
- rlcourse APPO with that same RLlib config function (only the import differs).
Each run gets the env-step budget of RLlib's example (2M) and a wall-clock limit; the runs share one
small Ray started by `init_ray` (not timed), one after another, in the order above for even seeds
and reversed for odd ones, so that neither library always runs on a machine warmed by the other.

Goals (issue 33): APPO reaches 450 within 2M env steps, faster in wall time than RLlib's APPO
example on this machine, and no slower than the course's IMPALA tuned example.

    python benchmarks/appo_cartpole.py [--seeds 0] [--target 450] [--time-limit 600]
"""

import argparse
from collections.abc import Callable

import ray
from common import TUNED_EXAMPLES, goal, median, print_table

from rlcourse.course import side_by_side
from rlcourse.course.tuned_example import load_tuned_example
from rlcourse.utils.resources import init_ray

MAX_ENV_STEPS = 2_000_000


def rllib_example(seed: int) -> Callable:
    """RLlib's tuned example as a config function that either library can build."""

    def appo_cartpole(APPOConfig):  # noqa: N803 (the parameter is the class it builds from)
        return (APPOConfig()
                .environment("CartPole-v1")
                .training(circular_buffer_iterations_per_batch=2, vf_loss_coeff=0.05,
                          entropy_coeff=0.0)
                .rl_module(model_config={"vf_share_layers": True})
                .debugging(seed=seed))

    return appo_cartpole


def course_example(algo: str, seed: int) -> Callable:
    """The course's tuned example for `algo` ("appo" or "impala"), with `seed`, for rlcourse."""

    def config():
        path = TUNED_EXAMPLES / algo / f"cartpole_{algo}.py"
        return load_tuned_example(path).config.debugging(seed=seed)

    return config


RUNS = [  # (row label, package, config function for a seed)
    ("rlcourse APPO, course settings", "rlcourse", lambda seed: course_example("appo", seed)),
    ("rlcourse IMPALA, course settings", "rlcourse", lambda seed: course_example("impala", seed)),
    ("RLlib APPO, RLlib's example", "ray.rllib", rllib_example),
    ("rlcourse APPO, RLlib's example", "rlcourse", rllib_example),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--target", type=float, default=450.0)
    parser.add_argument("--time-limit", type=float, default=600.0, help="seconds per run")
    parser.add_argument("--only", default="", help="run only the rows whose label contains this")
    # RLlib's APPO puts its learner in an actor of 1 CPU beside 2 runners of 1 CPU each: with
    # Ray's 2 CPUs of this machine it waits for a CPU forever, so Ray gets 4 logical CPUs.
    parser.add_argument("--num-cpus", type=int, default=4, help="Ray's logical CPUs")
    args = parser.parse_args()
    runs = [run for run in RUNS if args.only in run[0]]
    for package in side_by_side.PACKAGES:  # imports before any clock
        side_by_side.imports(rllib_example(0), package)
    init_ray(num_cpus=args.num_cpus)
    rows, seconds = [], {label: [] for label, _, _ in RUNS}
    try:
        for i, seed in enumerate(args.seeds):
            for label, package, config_for in runs if i % 2 == 0 else runs[::-1]:
                run = side_by_side.run(config_for(seed), package, target_return=args.target,
                                       max_env_steps=MAX_ENV_STEPS, max_seconds=args.time_limit,
                                       progress=None)
                at = run.first_reaching(args.target)
                if at:
                    seconds[label].append(at[1])
                rows.append([label, seed, f"{at[1]:.1f}" if at else "not reached",
                             f"{at[0]:,}" if at else f">{run.env_steps[-1]:,.0f}",
                             f"{run.env_steps[-1] / run.seconds[-1]:,.0f}",
                             f"{run.returns[-1]:.0f}"])
                print(" | ".join(map(str, rows[-1])), flush=True)  # each run as it ends
    finally:
        ray.shutdown()
    print_table(f"APPO on CartPole-v1 to a return of {args.target:g} (budget {MAX_ENV_STEPS:,} env "
                f"steps, {args.time_limit:g} s a run)",
                ["run", "seed", "seconds", "env steps", "env steps/s", "last return"], rows)
    ours, impala, theirs = (seconds[label] for label, _, _ in RUNS[:3])  # in RUNS' order
    if ours and theirs:
        ratio = median(theirs) / median(ours)
        print(f"wall time to {args.target:g}, RLlib's APPO example / rlcourse's APPO: {ratio:.2f}x "
              f"(goal > 1: {goal(ratio > 1)})")
    elif ours and any(label == RUNS[2][0] for label, *_ in rows):
        print(f"RLlib's APPO example did not reach {args.target:g} within {args.time_limit:g} s a run; "
              f"rlcourse's APPO did, in a median {median(ours):.1f} s (goal: {goal(True)})")
    if ours and impala:
        ratio = median(impala) / median(ours)
        print(f"wall time, rlcourse IMPALA / rlcourse APPO: {ratio:.2f}x (goal >= 1: "
              f"{goal(ratio >= 1)})")
    if not (ours and theirs and impala):
        print("a run did not reach the target: no ratio for it")


if __name__ == "__main__":
    main()
