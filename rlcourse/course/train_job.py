"""`rlcourse train`: train PPO or IMPALA from the command line, one printed line per iteration.

    python -m rlcourse train --algo ppo --env CartPole-v1 --stop-return 200 --set lr=3e-3 num_epochs=6
    python -m rlcourse train --config tuned_examples/ppo/cartpole_ppo.py

With `--algo`, the config starts from the algorithm's defaults (RLlib's); `--set name=value` changes
any setting, as RLlib's `rllib train --config` does, each value read as YAML (`3e-3`, `false`,
`[64, 64]`, `{fcnet_hiddens: [64]}`) and checked by its setter. With `--config`, a tuned example
(rlcourse/course/tuned_example.py) gives the config, the stop values and the pass criteria, and the
exit code says whether it passed.

This is the entrypoint of the course's Ray Jobs. A job's driver runs on the cluster, where `init_ray()`
joins it through RAY_ADDRESS (Ray sets it for every job); started by hand, it starts a Ray of its own.
Each line is flushed at once, so `ray job logs --follow` shows training as it happens. The exit code
says whether `--stop-return` was reached (0) or not within `--max-iterations` (1).
"""

import argparse
import time
from dataclasses import dataclass
from typing import Any

import ray

from rlcourse.algorithms.algorithm_config import AlgorithmConfig
from rlcourse.algorithms.config_validation import PLACEMENT_STRATEGIES
from rlcourse.course.cli import positive_int
from rlcourse.course.tuned_example import (
    ALGOS,
    TunedExample,
    load_tuned_example,
    reached,
    read_yaml,
    result_value,
)
from rlcourse.utils.checkpoints import check_checkpoint_dir
from rlcourse.utils.imports import import_attr
from rlcourse.utils.resources import init_ray


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rlcourse train", description=__doc__.splitlines()[0])
    parser.add_argument("--config", metavar="FILE",
                        help="a tuned example (.py or .yaml): its config, stop values and pass "
                             "criteria replace the other settings")
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
    parser.add_argument("--max-iterations", type=positive_int, default=100)
    parser.add_argument("--checkpoint-dir", help="save a checkpoint here at the end")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--set", nargs="+", default=[], metavar="NAME=VALUE",
                        help="any other setting, e.g. --set lr=3e-3 num_epochs=6 (values as YAML)")
    return parser


def parse_settings(pairs: list[str]) -> dict[str, Any]:
    """`["lr=3e-3", "use_kl_loss=false"]` -> {"lr": 0.003, "use_kl_loss": False}."""
    settings = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not (sep and name):
            raise SystemExit(f"rlcourse train: --set takes NAME=VALUE pairs, e.g. --set lr=3e-3; "
                             f"got {pair!r}.")
        settings[name] = _read_value(name, value)
    return settings


def _read_value(name: str, value: str) -> Any:
    """A number as Python reads it (010 is 10, inf a float), else YAML (with 1e-3 a float)."""
    for number in (int, float):
        try:
            return number(value)
        except ValueError:
            pass
    return read_yaml(value, f"--set {name}")


def build_config(args: argparse.Namespace) -> AlgorithmConfig:
    """The algorithm's config (its defaults are RLlib's) with the command's settings."""
    return (import_attr(ALGOS[args.algo])()
            .environment(args.env)
            .env_runners(num_env_runners=args.num_env_runners,
                         num_envs_per_env_runner=args.num_envs_per_env_runner,
                         num_cpus_per_env_runner=args.num_cpus_per_env_runner)
            .resources(placement_strategy=args.placement_strategy)
            .debugging(seed=args.seed)
            .update_from_dict(parse_settings(args.set)))


def format_result(result: dict[str, Any], elapsed_s: float) -> str:
    """One line per iteration: what a log reader wants to see at a glance."""
    runners = result["env_runners"]
    healthy = runners["num_healthy_env_runners"]
    return (f"iter {result['training_iteration']:4d} | "
            f"return {runners['episode_return_mean']:7.1f} | "
            f"env steps {result['num_env_steps_sampled_lifetime']:8d} | "
            f"runners healthy {healthy} (restarts {runners['num_env_runner_restarts']}) | "
            f"{elapsed_s:6.1f} s")


@dataclass
class ExampleRun:
    """How a tuned example's run ended: its last result, whether it passed, and its wall time."""

    result: dict[str, Any]
    passed: bool
    elapsed_s: float


def run_tuned_example(example: TunedExample, checkpoint_dir: str | None = None) -> ExampleRun:
    """Train until any stop value is reached, printing a line per iteration; judge the last result
    by the pass criteria. Results get Tune's `time_total_s`, so a stop dict means the same here."""
    start = time.perf_counter()
    with example.config.build_algo() as algo:
        print(f"{example.name} ({example.path}): stop at any of {example.stop}", flush=True)
        while True:
            result = algo.train()
            result["time_total_s"] = time.perf_counter() - start
            print(format_result(result, result["time_total_s"]), flush=True)
            if any(reached(result, example.stop).values()):
                break
        if checkpoint_dir:
            print(f"checkpoint: {algo.save_to_path(checkpoint_dir)}", flush=True)
    passed = all(reached(result, example.pass_criteria).values())
    return ExampleRun(result, passed, time.perf_counter() - start)


def main_tuned_example(path: str, checkpoint_dir: str | None) -> int:
    """`rlcourse train --config FILE`: exit code 0 if the example passed, 1 if not."""
    example = load_tuned_example(path)  # checked before Ray starts
    init_ray()
    run = run_tuned_example(example, checkpoint_dir)
    marks = ", ".join(f"{key} = {result_value(run.result, key):.4g} (mark {mark:g})"
                      for key, mark in example.pass_criteria.items())
    print(f"done: {'PASSED' if run.passed else 'FAILED'} {example.name}: {marks}, "
          f"{run.elapsed_s:.0f} s", flush=True)
    return 0 if run.passed else 1


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.checkpoint_dir:  # a folder where saving would fail fails now, not after training
        check_checkpoint_dir(args.checkpoint_dir)
    if args.config:
        return main_tuned_example(args.config, args.checkpoint_dir)
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
