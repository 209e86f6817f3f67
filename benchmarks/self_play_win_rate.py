"""Self-play on ConnectFour 4 x 4 (three in a row): per seed, main's win rate against the heuristic
on 400 fresh games, untrained and after pure self-play, with the env steps and wall time it took.

Each seed builds `self_play_config(BOARD, seed=s)` (the defaults) and runs
`train_self_play(algo, num_iterations, eval_interval, keep_best=True)`: main only ever plays itself
and its frozen snapshots; the heuristic only evaluates (200 games per evaluation), and main ends
with the weights of its best evaluation. Those are then measured on 400 games none of the
evaluations played (other seeds), as is the untrained main of the same seed before training.

Goal (issue 17): >= 0.80 on each seed. Ceilings against this heuristic on this board
(benchmarks/self_play_ceiling.py): best possible 0.947, a perfect minimax player 0.84.

Measured on a busy, shared 2-core machine (200 iterations, 1.6 M env steps per seed): seeds 0, 1, 2
won 0.870, 0.875, 0.880 of the fresh games (untrained 0.003, 0.010, 0.018), 182-201 s of training
each; the kept iterations were 90, 170 and 195.

    python benchmarks/self_play_win_rate.py [--seeds 0 1 2] [--iterations 200] [--eval-interval 5]
"""

import argparse
import time

from common import goal, print_table, ray_session

BOARD = {"rows": 4, "cols": 4, "connect": 3}
GOAL_WIN_RATE = 0.8
FRESH_GAMES, FRESH_SEED = 400, 100_000  # evaluations use seeds seed + iteration: far below this


def run_seed(seed: int, iterations: int, eval_interval: int) -> list[object]:
    import torch

    from rlcourse.course.self_play import self_play_config, train_self_play, win_rate_vs_heuristic

    # The Learner runs in this process: one torch thread, as in an actor given one CPU
    # (benchmarks/gpu_learner.py times an update on one thread and on torch's default count).
    torch.set_num_threads(1)
    algo = self_play_config(BOARD, seed=seed).build_algo()
    try:
        untrained = win_rate_vs_heuristic(algo, BOARD, FRESH_GAMES, FRESH_SEED)
        start = time.perf_counter()
        history = train_self_play(algo, num_iterations=iterations, eval_interval=eval_interval,
                                  seed=seed, keep_best=True)
        seconds = time.perf_counter() - start
        trained = win_rate_vs_heuristic(algo, BOARD, FRESH_GAMES, FRESH_SEED)
    finally:
        algo.stop()
    best = history.iterations.index(history.best_iteration)
    return [seed, f"{untrained:.3f}", f"{trained:.3f}", f"{trained - untrained:+.3f}",
            f"{history.best_iteration} ({history.win_rates[best]:.2f})",
            f"{history.env_steps[best]:,}", f"{history.env_steps[-1]:,}", f"{seconds:.0f}",
            goal(trained >= GOAL_WIN_RATE)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--eval-interval", type=int, default=5)
    args = parser.parse_args()
    with ray_session():
        rows = [run_seed(seed, args.iterations, args.eval_interval) for seed in args.seeds]
    print_table(f"Self-play on {BOARD}: win rate vs the heuristic, {FRESH_GAMES} fresh games "
                f"(goal >= {GOAL_WIN_RATE})",
                ["seed", "untrained", "trained", "gain", "kept: iteration (its eval)",
                 "env steps to it", "env steps", "train s", "goal"], rows)
    print("Timings are wall time on this machine; the trained policy is the best evaluated one.")


if __name__ == "__main__":
    main()
