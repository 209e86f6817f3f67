"""Lesson 15's PPO CartPole run on rlcourse and on RLlib for several seeds: wall time to a return.

What is measured: for each seed, the lesson's config function (`ppo_cartpole` in
lessons/source/15_graduating_to_rllib.md: every PPO setting written out, one runner in the driver, one
local Learner, a 64 x 64 network, `episode_return_mean` over 20 episodes) is built and trained by
rlcourse and by RLlib in turn, in this process, sharing one small Ray started by `init_ray` (not
timed). The time runs from just before `build_algo()` to the first iteration whose
`episode_return_mean` reached the target. The order of the two libraries alternates between seeds,
so neither always runs second. Both libraries are imported before any clock starts.

Goal (issue 18): rlcourse reaches the same return in less wall time than RLlib on the same machine,
i.e. the median ratio RLlib / rlcourse > 1.

    python benchmarks/rllib_side_by_side.py [--seeds 0 1 2] [--target 200] [--time-limit 120]
"""

import argparse
from collections.abc import Callable

import ray
import torch
from common import goal, median, print_table

from rlcourse.course import side_by_side
from rlcourse.utils.resources import init_ray


def ppo_cartpole_for(seed: int) -> Callable:
    """The lesson's config function, with `seed` in place of its seed 0."""

    def ppo_cartpole(PPOConfig):  # noqa: N803 (the parameter is the class it builds from)
        return (PPOConfig()
                .environment("CartPole-v1")
                .env_runners(num_env_runners=0, num_envs_per_env_runner=4)
                .learners(num_learners=0)
                .training(lr=1e-3, train_batch_size_per_learner=2000, minibatch_size=250,
                          num_epochs=6, gamma=0.99, lambda_=0.95, clip_param=0.2,
                          vf_clip_param=10.0, vf_loss_coeff=0.5, entropy_coeff=0.0,
                          use_kl_loss=False, grad_clip=0.5)
                .rl_module(model_config={"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh"})
                .reporting(metrics_num_episodes_for_smoothing=20)
                .debugging(seed=seed))

    return ppo_cartpole


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--target", type=float, default=200.0)
    parser.add_argument("--time-limit", type=float, default=120.0, help="seconds per run")
    args = parser.parse_args()
    torch.set_num_threads(1)  # as the lesson does
    for package in side_by_side.PACKAGES:  # imports before any clock
        side_by_side.imports(ppo_cartpole_for(0), package)
    init_ray()
    rows, ratios = [], []
    try:
        for i, seed in enumerate(args.seeds):
            order = side_by_side.PACKAGES if i % 2 == 0 else side_by_side.PACKAGES[::-1]
            reached = {}
            for package in order:
                run = side_by_side.run(ppo_cartpole_for(seed), package, target_return=args.target,
                                       max_seconds=args.time_limit, progress=None)
                reached[package] = run.first_reaching(args.target)
                steps_per_s = run.env_steps[-1] / run.seconds[-1]
                at = reached[package]
                rows.append([seed, package, f"{at[1]:.1f}" if at else "not reached",
                             f"{at[0]:,}" if at else f">{run.env_steps[-1]:,.0f}",
                             f"{steps_per_s:,.0f}", f"{run.build_seconds:.2f}"])
            if reached["rlcourse"] and reached["ray.rllib"]:
                ratios.append(reached["ray.rllib"][1] / reached["rlcourse"][1])
    finally:
        ray.shutdown()
    print_table(f"PPO on CartPole-v1 to a return of {args.target:g}, the same config on both",
                ["seed", "library", "seconds", "env steps", "env steps/s", "build s"], rows)
    if ratios:
        ratio = median(ratios)
        print(f"wall time to {args.target:g}, RLlib / rlcourse, per seed: "
              + ", ".join(f"{r:.1f}x" for r in ratios) + f"; median {ratio:.1f}x "
              f"(goal > 1: {goal(ratio > 1)})")
    else:
        print("no seed where both libraries reached the target: no ratio")


if __name__ == "__main__":
    main()
