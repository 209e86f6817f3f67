"""Which rlcourse files one PPO/DQN iteration runs code in (coverage.py, runner in this process)."""

import argparse
import importlib
import pkgutil
import sys
from pathlib import Path

import coverage

ROOT = Path(__file__).resolve().parents[1] / "rlcourse"


def _files(cov: coverage.Coverage) -> list[str]:
    data = cov.get_data()
    out = []
    for name in data.measured_files():
        path = Path(name)
        if ROOT in path.parents and data.lines(name):
            out.append(str(path.relative_to(ROOT.parent)))
    return sorted(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--algo", choices=["ppo", "dqn"], default="ppo")
    parser.add_argument("--list", action="store_true", help="print the files, not only the counts")
    args = parser.parse_args()
    # Import every engine module first, so that the counts are of code run, not of module-level
    # definitions that a lazy import happens to execute during the build.
    import rlcourse
    for module in pkgutil.walk_packages(rlcourse.__path__, "rlcourse."):
        if not module.name.startswith("rlcourse.course"):
            importlib.import_module(module.name)
    from rlcourse.algorithms.dqn.dqn import DQNConfig
    from rlcourse.algorithms.ppo.ppo import PPOConfig
    if args.algo == "ppo":
        config = (PPOConfig().environment("CartPole-v1").env_runners(num_env_runners=0)
                  .training(train_batch_size_per_learner=500, minibatch_size=128, num_epochs=1))
    else:
        config = (DQNConfig().environment("CartPole-v1").env_runners(num_env_runners=0)
                  .training(num_steps_sampled_before_learning_starts=32))
    cov = coverage.Coverage(data_file=None, include=[f"{ROOT}/*"])
    cov.start()
    algo = config.build_algo()
    cov.stop()
    build = _files(cov)
    cov.erase()
    cov.start()
    algo.train()
    algo.train()
    cov.stop()
    iteration = _files(cov)
    algo.stop()
    print(f"{args.algo}: build_algo() runs code in {len(build)} files, two train() calls in "
          f"{len(iteration)}")
    if args.list:
        print("build:", *build, sep="\n  ")
        print("train:", *iteration, sep="\n  ")


if __name__ == "__main__":
    sys.exit(main())
