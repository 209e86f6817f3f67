"""What recording costs a training run: PPO's env steps per second on CartPole with and without
`config.offline_data(output=...)`, in one run.

What is measured: the course's tuned PPO CartPole config (tuned_examples/ppo/cartpole_ppo.py: 2
runner actors of 4 sub-envs, 1,000-step batches, the learner in this process), trained
`--iterations` iterations per round, with the rounds interleaved so that a machine's load falls on
all variants alike:
  * not recording;
  * recording every `sample()` call as one Parquet file per runner (output_max_rows_per_file=None,
    RLlib's default);
  * recording in files of 2,000 rows (output_max_rows_per_file=2_000): fewer, larger writes.
A round's rate is the env steps sampled over the wall time of its iterations after the first (the
first includes the runners' start); the table gives each variant's median over `--rounds` rounds.

Goal (issue 34): recording costs a training run at most 10% of its env steps/s.

    python benchmarks/offline_recording.py [--rounds 3] [--iterations 12]
"""

import argparse
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq
from common import course_cartpole_config, goal, median, print_table, ray_session

VARIANTS = {"not recording": None, "recording, a file per sample()": {},
            "recording, 2,000-row files": {"output_max_rows_per_file": 2_000}}


def steps_per_second(output: dict | None, iterations: int, folder: Path) -> tuple[float, int]:
    """One round: env steps sampled per second after the first iteration, and rows written."""
    config = course_cartpole_config("ppo")
    if output is not None:
        config = config.offline_data(output=str(folder), **output)
    algo = config.build_algo()
    try:
        algo.train()
        first, start = algo.train()["num_env_steps_sampled_lifetime"], time.perf_counter()
        for _ in range(iterations - 2):
            last = algo.train()["num_env_steps_sampled_lifetime"]
        seconds = time.perf_counter() - start
    finally:
        algo.stop()
    rows = sum(pq.read_metadata(f).num_rows for f in folder.rglob("*.parquet"))
    return (last - first) / seconds, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=12)
    args = parser.parse_args()
    rates: dict[str, list[float]] = {name: [] for name in VARIANTS}
    written: dict[str, int] = dict.fromkeys(VARIANTS, 0)
    with ray_session(), tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.rounds):
            for k, (name, output) in enumerate(VARIANTS.items()):
                rate, rows = steps_per_second(output, args.iterations, Path(tmp) / f"{round_}-{k}")
                rates[name].append(rate)
                written[name] += rows
    base = median(rates["not recording"])
    print_table(f"PPO on CartPole (2 runners x 4 sub-envs), env steps/s sampled over iterations "
                f"2-{args.iterations}, median of {args.rounds} interleaved rounds",
                ["variant", "env steps/s", "x not recording", "rows written", "each round"],
                [[name, f"{median(r):,.0f}", f"{median(r) / base:.2f}", f"{written[name]:,}",
                  " ".join(f"{x:,.0f}" for x in r)] for name, r in rates.items()])
    worst = min(median(r) for name, r in rates.items() if name != "not recording") / base
    print(f"Goal: recording costs at most 10% of the env steps/s: {goal(worst >= 0.9)} "
          f"(worst variant {worst:.2f}x).")


if __name__ == "__main__":
    main()
