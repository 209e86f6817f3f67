"""Offline reading speed: rows per second that `OfflineData.sample` hands a learner, against a plain
loop over the same Parquet rows with pyarrow (the floor: no Ray Data, no checks).

What is measured: the BC fixture (tests/fixtures/cartpole_ppo_expert/, 5,000 CartPole rows)
copied `--copies` times into one folder, read in batches of `--batch` rows for `--epochs` epochs:
  * plain: pyarrow reads the files' obs and actions, numpy slices them into batches;
  * OfflineData, materialize_data=True (BC's default): checked once, then from Ray's object store;
  * OfflineData, materialize_data=False: streamed from the files by Ray Data.
Start-up (checks, Ray start) is timed apart from the reading.

    python benchmarks/offline_read.py [--copies 20] [--batch 2000] [--epochs 3]
"""

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pyarrow.parquet as pq

from rlcourse.algorithms.bc import BCConfig
from rlcourse.offline.offline_data import OfflineData, table_to_numpy
from rlcourse.utils.resources import init_ray

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "cartpole_ppo_expert"


def plain(files: list[Path], batch: int, epochs: int) -> int:
    rows = 0
    for _ in range(epochs):
        for path in files:
            data = table_to_numpy(pq.read_table(path, columns=["obs", "actions"]))
            for start in range(0, len(data["actions"]) - batch + 1, batch):
                rows += len(data["obs"][start:start + batch].astype(np.float32))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--batch", type=int, default=2000)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    init_ray()
    env = gym.make("CartPole-v1")
    with tempfile.TemporaryDirectory() as folder:
        source = next(FIXTURE.rglob("*.parquet"))
        files = [Path(folder) / f"copy-{i:03d}.parquet" for i in range(args.copies)]
        for path in files:
            shutil.copy(source, path)
        start = time.perf_counter()
        rows = plain(files, args.batch, args.epochs)
        print(f"{'plain pyarrow loop':<36} {'':>10} {rows / (time.perf_counter() - start):>12,.0f}")
        for materialize in (True, False):
            config = BCConfig().offline_data(input_=folder, materialize_data=materialize)
            start = time.perf_counter()
            data = OfflineData(config, env.observation_space, env.action_space)
            setup = time.perf_counter() - start
            batches = data.num_rows // args.batch * args.epochs
            start = time.perf_counter()
            rows = sum(len(data.sample(args.batch)["actions"]) for _ in range(batches))
            name = f"OfflineData materialize_data={materialize}"
            print(f"{name:<36} {setup:>9.2f}s {rows / (time.perf_counter() - start):>12,.0f}")
            data.stop()
    print("columns: setup time, then rows/s into learner batches")


if __name__ == "__main__":
    main()
