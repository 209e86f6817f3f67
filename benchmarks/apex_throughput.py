"""Ape-X against DQN: env steps/s and updates/s while the learner trains, on CartPole-v1.

What is measured, in one run, one after the other, with the same env, network, batch size and
`training_intensity` (the replay ratio setting, default 8):
  (a) DQN with one runner in this process: sampling and learning take turns, as the ratio says;
  (b) Ape-X with 1 and 2 runner actors and 1 replay shard: the runners sample all the time, the
      learner (in this process) trains at most at that ratio, and nobody waits for anyone;
  (c) for reference, Ape-X with 2 runners and `throttle_sampling_to_training_intensity=True`: the
      runners pause while the learner lags, so the replay ratio is kept (as DQN keeps it).
Each config is built, trained until learning has started and the buffers are warm (`--warmup-s`),
then timed over `--seconds` of train() calls: env steps sampled, updates and env steps trained in
that window divided by its wall time. Runner actors reserve 0.5 CPU each; Ray gets 2 CPUs.

Goal (issue 16): Ape-X with 2 runners samples >= 1.5x the env steps/s of (a) while the learner
trains.

    python benchmarks/apex_throughput.py [--seconds 20] [--warmup-s 5] [--training-intensity 8]
"""

import argparse
import time

from common import goal, print_table, ray_session

GOAL_RATIO = 1.5


def measure(config, warmup_s: float, seconds: float) -> dict:
    """Train `config` for `warmup_s` (and until updates happen), then time `seconds` of train()."""
    algo = config.build_algo()
    try:
        start = time.perf_counter()
        while not (algo.train()["learners"]["default_policy"]["num_updates"]
                   and time.perf_counter() - start >= warmup_s):
            pass
        sampled = trained = updates = 0
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            result = algo.train()
            sampled += result["env_runners"]["num_env_steps_sampled"]
            trained += result["learners"]["default_policy"]["num_env_steps_trained"]
            updates += result["learners"]["default_policy"]["num_updates"]
        elapsed = time.perf_counter() - start
    finally:
        algo.stop()
    return {"env_steps_per_s": sampled / elapsed, "updates_per_s": updates / elapsed,
            "replay_ratio": trained / max(sampled, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--warmup-s", type=float, default=5.0)
    parser.add_argument("--training-intensity", type=float, default=8.0)
    args = parser.parse_args()

    from rlcourse.algorithms.apex_dqn import ApexDQNConfig
    from rlcourse.algorithms.dqn import DQNConfig

    def apex(runners: int, throttle: bool = False) -> ApexDQNConfig:
        return (ApexDQNConfig().environment("CartPole-v1").debugging(seed=0)
                .env_runners(num_env_runners=runners, num_cpus_per_env_runner=0.5)
                .training(training_intensity=args.training_intensity,
                          throttle_sampling_to_training_intensity=throttle))

    configs = {
        "(a) DQN, 1 local runner": DQNConfig().environment("CartPole-v1").debugging(seed=0)
        .training(training_intensity=args.training_intensity),
        "(b) Ape-X, 1 runner actor": apex(1),
        "(b) Ape-X, 2 runner actors": apex(2),
        "(c) Ape-X, 2 runner actors, throttled": apex(2, throttle=True),
    }
    with ray_session(num_cpus=2):
        figures = {name: measure(config, args.warmup_s, args.seconds)
                   for name, config in configs.items()}
    base = figures["(a) DQN, 1 local runner"]
    rows = [[name, f"{f['env_steps_per_s']:,.0f}",
             f"{f['env_steps_per_s'] / base['env_steps_per_s']:.2f}x", f"{f['updates_per_s']:,.0f}",
             f"{f['updates_per_s'] / base['updates_per_s']:.2f}x", f"{f['replay_ratio']:.2f}"]
            for name, f in figures.items()]
    print_table(f"CartPole-v1 while the learner trains (training_intensity={args.training_intensity:g}"
                f", {args.seconds:g} s timed per row)",
                ["setup", "env steps/s", "vs (a)", "updates/s", "vs (a)", "replay ratio"], rows)
    ratio = figures["(b) Ape-X, 2 runner actors"]["env_steps_per_s"] / base["env_steps_per_s"]
    print(f"Goal: Ape-X with 2 runners samples >= {GOAL_RATIO:g}x the env steps/s of one local "
          f"runner while the learner trains: {ratio:.2f}x, {goal(ratio >= GOAL_RATIO)}.")


if __name__ == "__main__":
    main()
