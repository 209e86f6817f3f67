"""What Ray Tune costs on top of training: a 4-trial sweep against the same 4 trials back to back.

What is measured, in one process and one Ray (2 CPUs): four PPO runs on CartPole-v1 (lr 1e-3,
seeds 0-3, a fixed number of iterations, the runner in the training process) run

- back to back: `config.build_algo()`, `train()` N times, `stop()`, in this process (torch already
  imported: the baseline pays no start-up at all);
- as a Tune sweep of one trial at a time (`max_concurrent_trials=1`): Tune's own overhead (trial
  actors, placement groups, result logging, checkpoints at the end);
- as a Tune sweep the way it is used, trials side by side as the CPUs allow (each reserves 1 CPU).

Each trial's start-up is the time from Tune starting it to its first result, less that iteration.
Goal: the one-at-a-time sweep takes <= 1.15x the back-to-back runs.

    python benchmarks/tune_overhead.py [--iterations 25]
"""

import argparse
import tempfile
import time

from common import goal, print_table, ray_session

SEEDS = (0, 1, 2, 3)
GOAL_RATIO = 1.15


def ppo_config(seed):
    from rlcourse.algorithms.ppo import PPOConfig

    return (PPOConfig().environment("CartPole-v1")
            .env_runners(num_env_runners=0, num_envs_per_env_runner=4)
            .resources(num_cpus_for_main_process=1)
            .training(lr=1e-3, train_batch_size_per_learner=1000)
            .debugging(seed=seed))


def back_to_back(iterations: int) -> list[float]:
    """Each run's wall time, one after another in this process."""
    times = []
    for seed in SEEDS:
        start = time.perf_counter()
        with ppo_config(seed).build_algo() as algo:
            for _ in range(iterations):
                algo.train()
        times.append(time.perf_counter() - start)
    return times


def sweep(iterations: int, max_concurrent: int | None) -> tuple[float, list[float]]:
    """The sweep's wall time and each trial's start-up."""
    from ray import tune

    from rlcourse.algorithms.ppo import PPO

    started, startups = {}, []

    class StartUp(tune.Callback):
        def on_trial_start(self, iteration, trials, trial, **info):
            started[trial.trial_id] = time.perf_counter()

        def on_trial_result(self, iteration, trials, trial, result, **info):
            if result["training_iteration"] == 1:
                startups.append(time.perf_counter() - started[trial.trial_id]
                                - result["time_this_iter_s"])

    param_space = ppo_config(0).debugging(seed=tune.grid_search(list(SEEDS)))
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as storage:
        results = tune.Tuner(
            PPO.as_trainable(), param_space=param_space,
            tune_config=tune.TuneConfig(max_concurrent_trials=max_concurrent, reuse_actors=True),
            run_config=tune.RunConfig(stop={"training_iteration": iterations}, verbose=0,
                                      storage_path=storage, callbacks=[StartUp()],
                                      checkpoint_config=tune.CheckpointConfig(checkpoint_at_end=True)),
        ).fit()
        assert not results.errors, results.errors
    return time.perf_counter() - start, startups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=25)
    args = parser.parse_args()
    with ray_session(num_cpus=2):
        baseline = back_to_back(args.iterations)
        serial_s, serial_startups = sweep(args.iterations, max_concurrent=1)
        parallel_s, parallel_startups = sweep(args.iterations, max_concurrent=None)
    total = sum(baseline)
    rows = [["back to back, in this process", f"{total:.1f}", "1.00x",
             " ".join(f"{t:.1f}" for t in baseline), "-"],
            ["Tune, one trial at a time", f"{serial_s:.1f}", f"{serial_s / total:.2f}x", "-",
             " ".join(f"{t:.1f}" for t in serial_startups)],
            ["Tune, trials side by side", f"{parallel_s:.1f}", f"{parallel_s / total:.2f}x", "-",
             " ".join(f"{t:.1f}" for t in parallel_startups)]]
    print_table(f"4 PPO runs on CartPole-v1 ({args.iterations} iterations of 1,000 env steps each, "
                "seeds 0-3), Ray with 2 CPUs",
                ["how", "wall s", "vs back to back", "each run s", "each trial's start-up s"], rows)
    ratio = serial_s / total
    print(f"Goal: a sweep of one trial at a time <= {GOAL_RATIO}x back to back: "
          f"{goal(ratio <= GOAL_RATIO)} ({ratio:.2f}x).")


if __name__ == "__main__":
    main()
