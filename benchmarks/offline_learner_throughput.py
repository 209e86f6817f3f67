"""Offline learner throughput: rows per second into BC's loss with 1 and 2 learners, rlcourse beside
RLlib 2.60's BC on the same Parquet files, in one run.

What is measured: the BC fixture (tests/fixtures/cartpole_ppo_expert/, 5,000 CartPole rows in
RLlib's plain columns) copied `--copies` times into one folder. Each library's BCConfig, with the
same network (256 x 256, relu) and batches of `--batch` rows per learner, is built with
num_learners=0 (one learner, in the driver) and num_learners=2 (two Learner actors of half a CPU,
each reading its own split of the data: Ray Data's streaming_split in both libraries), on one
Ray started by `init_ray` with 6 logical CPUs: on a 2-CPU Ray, RLlib's two learners (1 CPU) left
its Ray Data pipeline waiting forever (seen with Ray 2.60 here); rlcourse's run fits in 2. After
one warm-up iteration (the first reads, RLlib's mapping of the data), `--iters` iterations of
`--steps` updates per learner are timed; rows are the batches' (`--batch` x learners x updates),
the time the train() calls' wall time. Building is not timed. RLlib's mapping actor and read
tasks get a quarter CPU each. Every learner computes on one torch thread: Ray starts the actors
so (OMP_NUM_THREADS=1 for a fraction of a CPU), and the driver is set so here, since two threads on
a busy 2-core machine ran the driver's learner 2 to 15 times slower, at random, in either library.

Goal (issue 34): the figures side by side, with rlcourse / RLlib ratios.

    python benchmarks/offline_learner_throughput.py [--copies 20] [--batch 2000] [--steps 10]
        [--iters 3] [--no-rllib]
"""

import argparse
import gc
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import ray
from common import print_table

from rlcourse.utils.resources import init_ray

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "cartpole_ppo_expert"
LEARNERS = (0, 2)


def bc_config(config_class: type, files: list[str], num_learners: int, batch: int,
              steps: int) -> Any:
    """The same BC run for either library's BCConfig."""
    env = gym.make("CartPole-v1")
    return (config_class().environment("CartPole-v1", observation_space=env.observation_space,
                                       action_space=env.action_space)
            .offline_data(input_=files, dataset_num_iters_per_learner=steps)
            .training(train_batch_size_per_learner=batch)
            .learners(num_learners=num_learners, num_cpus_per_learner=0.5)
            .rl_module(model_config={"fcnet_hiddens": [256, 256], "fcnet_activation": "relu"}))


def rllib_config(files: list[str], num_learners: int, batch: int, steps: int) -> Any:
    from ray.rllib.algorithms.bc import BCConfig  # (takes seconds to import)

    return bc_config(BCConfig, files, num_learners, batch, steps).offline_data(
        input_compress_columns=[],
        # At least two blocks per learner (RLlib's train_w_bc_finetune_w_ppo.py asks for that).
        input_read_method_kwargs={"num_cpus": 0.25, "override_num_blocks": max(2, 2 * num_learners)},
        map_batches_kwargs={"concurrency": 1, "num_cpus": 0.25})


def rows_per_second(config: Any, iters: int) -> float:
    """Rows into the loss per second over `iters` iterations, after a warm-up one."""
    algo = config.build_algo()
    try:
        algo.train()
        start = time.perf_counter()
        for _ in range(iters):
            algo.train()
        seconds = time.perf_counter() - start
    finally:
        algo.stop()
    rows = (config.train_batch_size_per_learner * max(1, config.num_learners)
            * config.dataset_num_iters_per_learner * iters)
    return rows / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--batch", type=int, default=2000, help="rows per learner and update")
    parser.add_argument("--steps", type=int, default=10, help="updates per iteration")
    parser.add_argument("--iters", type=int, default=3, help="timed iterations")
    parser.add_argument("--no-rllib", action="store_true")
    args = parser.parse_args()
    import torch

    from rlcourse.algorithms.bc import BCConfig

    torch.set_num_threads(1)
    init_ray(num_cpus=6)
    runs: dict[tuple[str, int], float] = {}
    with tempfile.TemporaryDirectory() as folder:
        source = next(FIXTURE.rglob("*.parquet"))
        files = [str(Path(folder) / f"copy-{i:03d}.parquet") for i in range(args.copies)]
        for path in files:
            shutil.copy(source, path)
        try:
            for learners in LEARNERS:
                runs["rlcourse", learners] = rows_per_second(
                    bc_config(BCConfig, files, learners, args.batch, args.steps), args.iters)
                if not args.no_rllib:
                    runs["ray.rllib", learners] = rows_per_second(
                        rllib_config(files, learners, args.batch, args.steps), args.iters)
        finally:
            gc.collect()  # RLlib's stopped BC leaves its batch reader open: end it while Ray runs
            ray.shutdown()
    print_table(
        f"BC's learner throughput on {args.copies} copies of the CartPole expert's 5,000 rows "
        f"(rows/s into the loss; batches of {args.batch:,} rows per learner, {args.steps} updates "
        f"per iteration, {args.iters} iterations timed)",
        ["learners", "rlcourse", "ray.rllib", "rlcourse / RLlib"],
        [[f"{max(1, n)} ({'driver' if n == 0 else f'{n} actors'})",
          f"{runs['rlcourse', n]:,.0f}",
          f"{runs['ray.rllib', n]:,.0f}" if ("ray.rllib", n) in runs else "not run",
          f"{runs['rlcourse', n] / runs['ray.rllib', n]:.2f}x" if ("ray.rllib", n) in runs else ""]
         for n in LEARNERS])


if __name__ == "__main__":
    main()
