"""What Ray Tune costs on top of training: a 4-trial sweep against the same 4 trials back to back.

What is measured, in one process and one Ray (2 CPUs): four PPO runs on CartPole-v1 (lr 1e-3,
seeds 0-3, a fixed number of iterations, the runner in the training process) run

- back to back: `config.build_algo()`, `train()` N times, `stop()`, in this process (torch already
  imported: the baseline pays no start-up at all);
- as a Tune sweep of one trial at a time (`max_concurrent_trials=1`): Tune's own overhead (trial
  actors, placement groups, result logging, checkpoints at the end);
- as a Tune sweep the way it is used, trials side by side as the CPUs allow (each reserves 1 CPU).

Each trial's start-up (one at a time) is the time from the sweep's start or the previous trial's
end to its first result, less that iteration. Goal: the sweep takes <= 1.15x the back-to-back runs;
both sweeps are printed, the one at a time shows Tune's own cost.

    python benchmarks/tune_overhead.py [--iterations 100]
"""

import argparse
import tempfile
import time

from common import course_cartpole_config, goal, print_table, ray_session

SEEDS = (0, 1, 2, 3)
GOAL_RATIO = 1.15


def ppo_config(seed):
    return (course_cartpole_config("ppo")
            .env_runners(num_env_runners=0, num_envs_per_env_runner=4)
            .resources(num_cpus_for_main_process=1)
            .training(lr=1e-3)
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

    last_event, startups = [0.0], []  # when the last trial ended (or the sweep began)

    class StartUp(tune.Callback):
        """Start-up of each trial: from the sweep's start (or the previous trial's end) to its
        first result, less that first iteration. Meaningful one trial at a time."""

        def on_trial_result(self, iteration, trials, trial, result, **info):
            if result["training_iteration"] == 1:
                startups.append(time.perf_counter() - last_event[0] - result["time_this_iter_s"])

        def on_trial_complete(self, iteration, trials, trial, **info):
            last_event[0] = time.perf_counter()

    param_space = ppo_config(0).debugging(seed=tune.grid_search(list(SEEDS)))
    start = last_event[0] = time.perf_counter()
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
    parser.add_argument("--iterations", type=int, default=100)
    args = parser.parse_args()
    with ray_session(num_cpus=2):
        baseline = back_to_back(args.iterations)
        serial_s, serial_startups = sweep(args.iterations, max_concurrent=1)
        parallel_s, _ = sweep(args.iterations, max_concurrent=None)
    total = sum(baseline)
    rows = [["back to back, in this process", f"{total:.1f}", "1.00x",
             " ".join(f"{t:.1f}" for t in baseline), "-"],
            ["Tune, one trial at a time", f"{serial_s:.1f}", f"{serial_s / total:.2f}x", "-",
             " ".join(f"{t:.1f}" for t in serial_startups)],
            ["Tune, trials side by side", f"{parallel_s:.1f}", f"{parallel_s / total:.2f}x", "-",
             "-"]]
    print_table(f"4 PPO runs on CartPole-v1 ({args.iterations} iterations of 1,000 env steps each, "
                "seeds 0-3), Ray with 2 CPUs",
                ["how", "wall s", "vs back to back", "each run s", "each trial's start-up s"], rows)
    ratio, serial_ratio = parallel_s / total, serial_s / total
    print(f"Tune's fixed cost, one trial at a time: {serial_s - total:.1f} s for 4 trials "
          f"({serial_ratio:.2f}x): the first trial's process imports torch and Tune, and every "
          "result is logged (JSON, CSV, TensorBoard); reuse_actors runs the other trials in it.")
    print(f"Goal: the 4-trial sweep <= {GOAL_RATIO}x the same runs back to back: "
          f"{goal(ratio <= GOAL_RATIO)} ({ratio:.2f}x as Tune runs it, trials side by side; "
          f"{serial_ratio:.2f}x one at a time).")


if __name__ == "__main__":
    main()
