"""`rlcourse train`: train PPO or IMPALA from the command line, one printed line per iteration.

    python -m rlcourse train --algo ppo --env CartPole-v1 --num-env-runners 2 --stop-return 200

This is the entrypoint of the course's Ray Jobs. A job's driver runs on the cluster, where `init_ray()`
joins it through RAY_ADDRESS (Ray sets it for every job); started by hand, it starts a Ray of its own.
Each line is flushed at once, so `ray job logs --follow` shows training as it happens. The exit code
says whether `--stop-return` was reached (0) or not within `--max-iterations` (1).
"""

import argparse
import time
from typing import Any

import ray

from rlcourse.algorithms.algorithm_config import AlgorithmConfig
from rlcourse.utils.imports import import_attr
from rlcourse.utils.resources import init_ray
from rlcourse.utils.validation import PLACEMENT_STRATEGIES

ALGOS = {"ppo": "rlcourse.algorithms.ppo.ppo:PPOConfig",
         "impala": "rlcourse.algorithms.impala.impala:IMPALAConfig"}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rlcourse train", description=__doc__.splitlines()[0])
    parser.add_argument("--algo", choices=sorted(ALGOS), default="ppo")
    parser.add_argument("--env", default="CartPole-v1",
                        help="a gymnasium id or a name given to rlcourse.register_env")
    parser.add_argument("--num-env-runners", type=int, default=2)
    parser.add_argument("--num-envs-per-env-runner", type=int, default=4)
    parser.add_argument("--num-cpus-per-env-runner", type=float, default=0.5)
    parser.add_argument("--placement-strategy", choices=[s for s in PLACEMENT_STRATEGIES if s],
                        help="put the runners in a placement group (default: Ray's scheduling)")
    parser.add_argument("--stop-return", type=float,
                        help="stop once episode_return_mean reaches this")
    parser.add_argument("--max-iterations", type=int, default=100)
    parser.add_argument("--checkpoint-dir", help="save a checkpoint here at the end")
    parser.add_argument("--seed", type=int)
    return parser


def build_config(args: argparse.Namespace) -> AlgorithmConfig:
    """The algorithm's config (its defaults, which suit CartPole) with the command's settings."""
    return (import_attr(ALGOS[args.algo])()
            .environment(args.env)
            .env_runners(num_env_runners=args.num_env_runners,
                         num_envs_per_env_runner=args.num_envs_per_env_runner,
                         num_cpus_per_env_runner=args.num_cpus_per_env_runner)
            .resources(placement_strategy=args.placement_strategy)
            .debugging(seed=args.seed))


def format_result(result: dict[str, Any], elapsed_s: float) -> str:
    """One line per iteration: what a log reader wants to see at a glance."""
    runners = result["env_runners"]
    healthy = runners["num_healthy_env_runners"]
    return (f"iter {result['training_iteration']:4d} | "
            f"return {runners['episode_return_mean']:7.1f} | "
            f"env steps {result['num_env_steps_sampled_lifetime']:8d} | "
            f"runners healthy {healthy} (restarts {runners['num_env_runner_restarts']}) | "
            f"{elapsed_s:6.1f} s")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    config = build_config(args)
    init_ray()  # join the cluster of RAY_ADDRESS (a Ray Job's driver), or start a local Ray
    nodes = [node["NodeName"] for node in ray.nodes() if node["Alive"]]
    print(f"Ray cluster: {len(nodes)} node(s) {nodes}, "
          f"{ray.cluster_resources().get('CPU', 0):g} CPUs", flush=True)
    start = time.perf_counter()
    reached, ret = False, float("nan")
    with config.build_algo() as algo:
        runner_nodes = algo.env_runner_group.get_node_names()
        print(f"{args.algo.upper()} on {args.env}: runners on nodes {runner_nodes}", flush=True)
        for _ in range(args.max_iterations):
            result = algo.train()
            ret = result["env_runners"]["episode_return_mean"]
            print(format_result(result, time.perf_counter() - start), flush=True)
            if args.stop_return is not None and ret >= args.stop_return:
                reached = True
                break
        if args.checkpoint_dir:
            print(f"checkpoint: {algo.save_to_path(args.checkpoint_dir)}", flush=True)
    if args.stop_return is None:
        print(f"done: {algo.iteration} iterations, return {ret:.1f}", flush=True)
        return 0
    verdict = "reached" if reached else "did not reach"
    print(f"done: {verdict} return {args.stop_return:g} (return {ret:.1f} after "
          f"{algo.iteration} iterations, {time.perf_counter() - start:.0f} s)", flush=True)
    return 0 if reached else 1
