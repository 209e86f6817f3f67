"""CQL on Pendulum-v1 from the course's SAC's recorded steps, to RLlib's mark: rows read and wall
time to an evaluation return of -700, rlcourse beside RLlib 2.60's CQL on the same Parquet files.

What is measured: one config, written once (`cql_pendulum`: RLlib's tuned example
rllib/tuned_examples/cql/pendulum_cql.py's settings but the course's SAC network, 128 x 128 (RLlib's
256 x 256 costs 4x the time per update on a 2-core machine), one local learner,
evaluation of 5 greedy episodes after every iteration of `--iters` updates), is built and trained
by rlcourse and by RLlib in turn, in this process, on one small Ray started by `init_ray` (not
timed). The data is tests/fixtures/pendulum_sac/ (tests/fixtures/record_pendulum_sac.py: 10,000
steps of SAC learning from scratch) unless `--data` names other Parquet files. Time runs from just
before `build_algo()` to the first evaluation at or above the mark; rows are those each library's
learner reports it trained on (`num_env_steps_trained`, summed over iterations).

Goal (issue 34): rlcourse reaches -700 within 800,000 rows, in less wall time than RLlib's CQL.

    python benchmarks/cql_pendulum.py [--seed 0] [--iters 20] [--max-rows 800000] [--no-rllib]
"""

import argparse
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import ray
from common import goal, print_table

from rlcourse.utils.resources import init_ray

DATA = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "pendulum_sac"
MARK = -700.0


def cql_pendulum(config_class: type, files: list[str], seed: int, iters: int) -> Any:
    """RLlib's tuned Pendulum CQL settings, for either library's CQLConfig."""
    env = gym.make("Pendulum-v1")
    return (config_class().environment("Pendulum-v1", observation_space=env.observation_space,
                                       action_space=env.action_space)
            .offline_data(input_=files, dataset_num_iters_per_learner=iters)
            .training(bc_iters=200, tau=9.5e-3, min_q_weight=5.0, train_batch_size_per_learner=1024,
                      twin_q=True, actor_lr=1.7e-3, critic_lr=2.5e-3, alpha_lr=1e-3, lr=None)
            .rl_module(model_config={"fcnet_hiddens": [128, 128], "fcnet_activation": "relu"})
            .evaluation(evaluation_interval=1, evaluation_duration=5,
                        evaluation_config={"explore": False})
            .debugging(seed=seed))


def rllib_config(files: list[str], seed: int, iters: int) -> Any:
    from ray.rllib.algorithms.cql import CQLConfig  # (takes seconds to import)

    # Plain columns (rlcourse never writes pickled ones), one mapping actor of half a CPU (the
    # default two of a whole CPU each leave no CPU for the reads on a 2-CPU Ray).
    return cql_pendulum(CQLConfig, files, seed, iters).offline_data(
        input_compress_columns=[], map_batches_kwargs={"concurrency": 1, "num_cpus": 0.5})


def train_to_mark(config: Any, max_rows: int, time_limit: float) -> dict:
    """Train until an evaluation reaches MARK, `max_rows` rows or `time_limit` seconds."""
    start = time.perf_counter()
    algo = config.build_algo()
    rows, returns = 0, []
    try:
        while True:
            result = algo.train()
            learners = result["learners"]
            rows += learners["__all_modules__"]["num_env_steps_trained"] if "__all_modules__" in (
                learners) else learners["default_policy"]["num_env_steps_trained"]
            returns.append(result["evaluation"]["env_runners"]["episode_return_mean"])
            seconds = time.perf_counter() - start
            if returns[-1] >= MARK or rows >= max_rows or seconds >= time_limit:
                break
    finally:
        algo.stop()
    return {"reached": returns[-1] >= MARK, "rows": rows, "seconds": seconds, "returns": returns}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DATA), help="a folder of Parquet files")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--iters", type=int, default=20, help="updates per iteration")
    parser.add_argument("--max-rows", type=int, default=800_000)
    parser.add_argument("--time-limit", type=float, default=1200.0, help="seconds per library")
    parser.add_argument("--no-rllib", action="store_true")
    args = parser.parse_args()
    from rlcourse.algorithms.cql import CQLConfig

    files = [str(p) for p in sorted(Path(args.data).rglob("*.parquet"))]
    init_ray()
    runs = {}
    try:
        runs["rlcourse"] = train_to_mark(cql_pendulum(CQLConfig, files, args.seed, args.iters),
                                         args.max_rows, args.time_limit)
        if not args.no_rllib:
            try:
                config = rllib_config(files, args.seed, args.iters)
            except Exception as error:  # noqa: BLE001 (a missing or changed RLlib is reported)
                print(f"RLlib's CQL not run: {type(error).__name__}: {error}")
            else:
                runs["ray.rllib"] = train_to_mark(config, args.max_rows, args.time_limit)
    finally:
        ray.shutdown()
    for name, run in runs.items():
        print(f"{name} evaluation returns: {[round(r) for r in run['returns']]}")
    print_table(f"CQL on Pendulum-v1 from {len(files)} files of SAC's steps, to an evaluation "
                f"return of {MARK:g} (seed {args.seed}, {args.iters} updates of 1,024 rows per "
                "iteration)", ["library", "reached", "rows", "seconds", "rows/s", "last return"],
                [[name, "yes" if r["reached"] else "no", f"{r['rows']:,}", f"{r['seconds']:.1f}",
                  f"{r['rows'] / r['seconds']:,.0f}", f"{r['returns'][-1]:.0f}"]
                 for name, r in runs.items()])
    ours, theirs = runs["rlcourse"], runs.get("ray.rllib")
    # Faster: RLlib reached the mark later, or ran longer than rlcourse took without reaching it.
    faster = theirs is None or ours["seconds"] < theirs["seconds"]
    print(f"Goal: rlcourse reaches {MARK:g} within 800,000 rows, in less wall time than RLlib's "
          f"CQL: {goal(ours['reached'] and ours['rows'] <= 800_000 and faster)}"
          f"{' (RLlib not run)' if theirs is None else ''}.")


if __name__ == "__main__":
    main()
