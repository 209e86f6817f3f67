"""Throughput: IMPALA against PPO with the same two runner actors, side by side in one Ray session.

What is measured: env steps sampled and trained per second of `train()` wall time on CartPole-v1,
for PPO and IMPALA with the course's CartPole settings (tuned_examples/) and the same layout:
2 runners x 4 sub-envs, 0.5 CPU each, the learner in the driver, Ray with 2 CPUs. Each run builds
the algorithm, trains 2 warm-up iterations, then trains for `--seconds`; runs alternate
(PPO, IMPALA, PPO, IMPALA, ...) so that a slow moment of the machine hits both alike, and the
table shows medians.

PPO samples, then learns while its runners wait, then sends weights. IMPALA keeps sample requests
in flight on every runner and learns in a thread at the same time, so neither side waits.

Goal: IMPALA samples >= 1.5x as many env steps per second as PPO.

    python benchmarks/impala_vs_ppo.py [--seconds 15] [--repeats 2]
"""

import argparse
import time

from common import course_cartpole_config, goal, median, print_table, ray_session

GOAL_RATIO = 1.5
CONFIGS = {"PPO": "ppo", "IMPALA": "impala"}


def throughput(algo: str, seconds: float) -> dict[str, float]:
    """Train for `seconds` after two warm-up iterations; return rates and IMPALA's extra figures."""
    config = (course_cartpole_config(algo).debugging(seed=0)
              .env_runners(num_env_runners=2, num_envs_per_env_runner=4, num_cpus_per_env_runner=0.5))
    with config.build_algo() as algo:
        for _ in range(2):
            first = algo.train()
        start = time.perf_counter()
        lags, iterations = [], 0
        while time.perf_counter() - start < seconds:
            last = algo.train()
            iterations += 1
            lags.append(last["learners"]["default_policy"].get("policy_lag", 0.0))
        elapsed = time.perf_counter() - start
    return {
        "sampled": (last["num_env_steps_sampled_lifetime"]
                    - first["num_env_steps_sampled_lifetime"]) / elapsed,
        "trained": (last["num_env_steps_trained_lifetime"]
                    - first["num_env_steps_trained_lifetime"]) / elapsed,
        "iterations": iterations / elapsed,
        "policy_lag": median(lags),
        "queue_drops": last.get("learner_queue", {}).get("num_drops_lifetime", 0),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15.0, help="timed training per run")
    parser.add_argument("--repeats", type=int, default=2, help="runs per algorithm")
    args = parser.parse_args()

    runs: dict[str, list[dict[str, float]]] = {name: [] for name in CONFIGS}
    with ray_session(num_cpus=2):
        for _ in range(args.repeats):
            for name, config_cls in CONFIGS.items():
                runs[name].append(throughput(config_cls, args.seconds))

    figures = {name: {key: median([run[key] for run in rs]) for key in rs[0]}
               for name, rs in runs.items()}
    ratio = figures["IMPALA"]["sampled"] / figures["PPO"]["sampled"]
    rows = [[name, f"{f['sampled']:,.0f}", f"{f['trained']:,.0f}", f"{f['iterations']:.1f}",
             f"{f['policy_lag']:.1f}" if name == "IMPALA" else "", f"{f['queue_drops']:.0f}"
             if name == "IMPALA" else ""] for name, f in figures.items()]
    print_table(f"IMPALA vs PPO on CartPole-v1, 2 runners x 4 envs (0.5 CPU each), local learner; "
                f"median of {args.repeats} x {args.seconds:g} s",
                ["algorithm", "env steps sampled/s", "env steps trained/s", "train() calls/s",
                 "policy lag (updates)", "queue drops"], rows)
    print(f"Goal: IMPALA samples >= {GOAL_RATIO:g}x PPO's env steps/s: {goal(ratio >= GOAL_RATIO)} "
          f"({ratio:.2f}x).")


if __name__ == "__main__":
    main()
