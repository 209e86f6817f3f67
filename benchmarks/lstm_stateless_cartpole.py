"""PPO with an LSTM on StatelessCartPole (CartPole without the velocities), rlcourse beside RLlib.

What is measured: RLlib's tuned example (rllib/tuned_examples/ppo/stateless_cartpole_ppo.py: lr 3e-4,
6 epochs, vf_loss_coeff 0.05, the KL loss, MeanStdFilter, vf_share_layers, use_lstm with RLlib's
default cell of 256 and max_seq_len 20) written once as a config function and built by each library
in turn, in this process, sharing one small Ray (started before any clock). Sampling runs in the
driver (num_env_runners=0, 4 sub-envs) on both; each run stops at the target return, at
--max-env-steps or at --time-limit wall seconds. Printed: env steps and wall seconds to the target
(or how far each got), env steps/s and the last mean return.

Goal (issue 33): 350 within 2M env steps, in less wall time than RLlib. A run to 2M takes hours on a
2-core machine: pass --max-env-steps 2000000 --time-limit 0 for the full goal.

    python benchmarks/lstm_stateless_cartpole.py [--target 350] [--max-env-steps 2000000]
        [--time-limit 600] [--libraries rlcourse ray.rllib] [--seeds 0 1 2]
"""

# ruff: noqa: E402  (imports follow the thread pinning below, which must come before NumPy)
import os

# One BLAS thread for the runners' NumPy LSTM in this process, as Ray gives a runner actor; torch
# gets one thread below. Both libraries run under the same settings.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse

import ray
import torch
from common import goal, median, print_table

from rlcourse.course import side_by_side
from rlcourse.utils.resources import init_ray


def ppo_lstm_config(seed: int):
    """RLlib's config as a function of the classes each library names (side_by_side.py)."""
    def ppo_lstm(PPOConfig, StatelessCartPole, MeanStdFilter):  # noqa: N803 (classes it builds from)
        return (PPOConfig()
                .environment(StatelessCartPole)
                .env_runners(num_env_runners=0, num_envs_per_env_runner=4,
                             env_to_module_connector=lambda env: MeanStdFilter())
                .learners(num_learners=0)
                .training(lr=3e-4, gamma=0.99, num_epochs=6, vf_loss_coeff=0.05, use_kl_loss=True)
                .rl_module(model_config={"vf_share_layers": True, "use_lstm": True,
                                         "max_seq_len": 20})
                .debugging(seed=seed))
    return ppo_lstm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", type=float, default=350.0)
    parser.add_argument("--max-env-steps", type=int, default=2_000_000)
    parser.add_argument("--time-limit", type=float, default=600.0, help="seconds per run; 0: none")
    parser.add_argument("--libraries", nargs="+", default=list(side_by_side.PACKAGES),
                        choices=side_by_side.PACKAGES)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    args = parser.parse_args()
    torch.set_num_threads(1)  # as the lessons do: the learner in the driver, one thread
    for package in args.libraries:  # imports before any clock
        side_by_side.imports(ppo_lstm_config(0), package)
    init_ray()
    rows, reached = [], {package: [] for package in args.libraries}
    try:
        for seed in args.seeds:  # odd seeds run the libraries in the other order
            for package in args.libraries[::1 if seed % 2 == 0 else -1]:
                run = side_by_side.run(ppo_lstm_config(seed), package, target_return=args.target,
                                       max_env_steps=args.max_env_steps,
                                       max_seconds=args.time_limit or None, progress=print)
                at = run.first_reaching(args.target)
                reached[package].append(at[1] if at else None)
                rows.append([package, seed, f"{at[0]:,}" if at else f">{run.env_steps[-1]:,.0f}",
                             f"{at[1]:.0f}" if at else f">{run.seconds[-1]:.0f}",
                             f"{run.env_steps[-1] / run.seconds[-1]:,.0f}",
                             f"{run.returns[-1]:.1f}", f"{run.returns.max():.1f}"])
    finally:
        ray.shutdown()
    print_table(f"PPO + LSTM on StatelessCartPole to a return of {args.target:g} (RLlib's config)",
                ["library", "seed", "env steps", "seconds", "env steps/s", "last return",
                 "best return"], rows)
    ours = reached.get("rlcourse", [])
    budget = f"{args.max_env_steps:,} env steps" + (f" and {args.time_limit:g} s a run"
                                                    if args.time_limit else "")
    print(f"rlcourse reached {args.target:g} within {budget} on every seed: "
          f"{goal(bool(ours) and None not in ours)} (the goal: within 2,000,000 env steps, no "
          "time limit)")
    ratios = [theirs / mine for mine, theirs in zip(ours, reached.get("ray.rllib", []),
                                                    strict=True) if mine and theirs]
    if ratios:
        print(f"wall time to {args.target:g}, RLlib / rlcourse, median over the {len(ratios)} "
              f"seeds both reached it: {median(ratios):.1f}x (goal > 1: {goal(median(ratios) > 1)})")

if __name__ == "__main__":
    main()
