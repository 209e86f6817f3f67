"""Offline to online: does a BC policy's start save PPO env steps? (RLlib's example
`train_w_bc_finetune_w_ppo.py` tells this story.)

What is measured: BC learns CartPole from the PPO expert's recorded steps
(tests/fixtures/cartpole_ppo_expert/, as lesson 13) until its greedy evaluation return
reaches 450. Then, for each seed, the course's PPO config (tuned_examples/ppo/cartpole_ppo.py, its
runners in this process: `num_env_runners=0` with 8 sub-envs) trains twice: from scratch, and with
the BC module's weights loaded into the learner and the runners before the first `train()`
(`set_module_weights`; BC's value network is untrained, as RLlib's example's is). Each run stops
when the smoothed training return (last 100 episodes) reaches `--target`, or at `--max-steps`
env steps. The table gives env steps and wall seconds to the target; the BC rows count only PPO's
env steps (BC itself sampled none: it learned from 5,000 recorded ones).

    python benchmarks/bc_to_ppo.py [--seeds 0 1] [--target 450] [--max-steps 150000]
"""

import argparse
import time
from pathlib import Path

from common import course_cartpole_config, median, print_table, ray_session

from rlcourse.algorithms.bc import BCConfig

EXPERT_DATA = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "cartpole_ppo_expert"


def bc_weights() -> tuple[dict, list[float]]:
    """The BC module's weights after it reaches an evaluation return of 450 (or 30 iterations)."""
    config = (BCConfig().environment("CartPole-v1").env_runners(num_env_runners=0)
              .offline_data(input_=str(EXPERT_DATA), dataset_num_iters_per_learner=10)
              .training(lr=3e-3, train_batch_size_per_learner=250)
              .rl_module(model_config={"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh",
                                       "vf_share_layers": False})
              .evaluation(evaluation_interval=1, evaluation_duration=10).debugging(seed=0))
    returns = []
    with config.build_algo() as algo:
        while len(returns) < 30 and max(returns, default=0) < 450:
            returns.append(algo.train()["evaluation"]["env_runners"]["episode_return_mean"])
        return algo.learner_group.get_weights(), returns


def ppo_run(seed: int, weights: dict | None, target: float, max_steps: int) -> tuple[int, float, bool]:
    """Env steps and seconds until PPO's smoothed return reaches `target`; whether it did."""
    config = (course_cartpole_config("ppo")
              .env_runners(num_env_runners=0, num_envs_per_env_runner=8).debugging(seed=seed))
    start = time.perf_counter()
    with config.build_algo() as algo:
        if weights is not None:
            algo.set_module_weights(weights)
        while True:
            result = algo.train()
            steps = result["num_env_steps_sampled_lifetime"]
            reached = result["env_runners"]["episode_return_mean"] >= target
            if reached or steps >= max_steps:
                return steps, time.perf_counter() - start, reached


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--target", type=float, default=450.0)
    parser.add_argument("--max-steps", type=int, default=150_000)
    args = parser.parse_args()
    with ray_session():
        weights, bc_returns = bc_weights()
        print(f"BC on the expert's 5,000 recorded steps: evaluation returns {bc_returns}")
        rows = []
        for name, start in (("PPO from scratch", None), ("PPO from the BC policy", weights)):
            runs = [ppo_run(seed, start, args.target, args.max_steps) for seed in args.seeds]
            rows.append([name, ", ".join(f"{steps:,}{'' if ok else ' (not reached)'}"
                                         for steps, _, ok in runs),
                         f"{median([steps for steps, _, _ in runs]):,.0f}",
                         f"{median([seconds for _, seconds, _ in runs]):.1f}"])
    print_table(f"PPO on CartPole to a smoothed return of {args.target:.0f}, seeds {args.seeds}",
                ["start", "env steps per seed", "median env steps", "median s"], rows)


if __name__ == "__main__":
    main()
