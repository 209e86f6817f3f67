"""Start-up time and memory: what building PPO with two runner actors costs, and what one runner costs.

What is measured, in one Ray session started as the course starts it (2 CPUs, no dashboard):
  * how long `ray.init` takes;
  * how long the course's CartPole PPO (tuned_examples/ppo/cartpole_ppo.py) with
    `.env_runners(num_env_runners=2, num_cpus_per_env_runner=0.5)` takes to `build_algo()`, the
    first time in this process (the driver imports torch for the Learner then, as in a fresh
    notebook kernel) and a second time;
  * the private memory (USS) of one of its runner actors, after the build and after one `train()`;
  * baselines started the same way: bare Ray actors that import nothing, numpy + gymnasium, or
    numpy + gymnasium + torch, and one EnvRunner actor on its own (start-up time to the first
    answer, and USS; median of `--repeats` starts, each actor killed before the next starts).

Goal: `build_algo()` <= 3 s and one runner actor <= 120 MB. The baselines show where the runner's
memory goes: Ray's own worker, numpy + gymnasium, and what importing torch would add to every runner.

    python benchmarks/startup_memory.py [--repeats 3]
"""

import argparse
import importlib
import os
import time

import psutil
import ray
from common import course_cartpole_config, goal, median, print_table, ray_session, timed, uss_mb

from rlcourse.algorithms.ppo.ppo import PPOConfig
from rlcourse.env.single_agent_env_runner import SingleAgentEnvRunner

NUM_ENV_RUNNERS = 2
CPUS_PER_RUNNER = 0.5
BUILD_GOAL_S = 3.0
RUNNER_USS_GOAL_MB = 120.0
NUMPY_GYM = "bare Ray actor + numpy + gymnasium"
NUMPY_GYM_TORCH = "bare Ray actor + numpy + gymnasium + torch"


class BareActor:
    """A Ray actor that only imports `modules`: the floor a runner's start-up and memory build on."""

    def __init__(self, *modules: str):
        for name in modules:
            importlib.import_module(name)


def ppo_config() -> PPOConfig:
    return (course_cartpole_config("ppo")
            .env_runners(num_env_runners=NUM_ENV_RUNNERS, num_envs_per_env_runner=1,
                         num_cpus_per_env_runner=CPUS_PER_RUNNER))


def actor_start(actor_class: type, *args: object) -> tuple[float, float]:
    """Start one actor, wait for its first answer (its pid); return (seconds, USS MB), then kill it."""
    remote_class = ray.remote(actor_class).options(num_cpus=CPUS_PER_RUNNER)
    start = time.perf_counter()
    actor = remote_class.remote(*args)
    pid = ray.get(actor.__ray_call__.remote(lambda self: os.getpid()))
    seconds = time.perf_counter() - start
    process = psutil.Process(pid)
    memory = uss_mb(pid)
    ray.kill(actor)
    process.wait(timeout=30)  # gone before the next one starts
    return seconds, memory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="starts of each baseline actor")
    args = parser.parse_args()

    with ray_session(num_cpus=2) as ray_init_s:
        config = ppo_config()
        algo, build_s = timed(config.build_algo)
        runner_pid = algo.env_runner_group.foreach_env_runner(lambda runner: os.getpid())[0]
        runner_uss_built = uss_mb(runner_pid)
        algo.train()
        runner_uss_trained = uss_mb(runner_pid)
        algo.stop()
        algo, second_build_s = timed(config.build_algo)
        algo.stop()

        baselines = {
            "bare Ray actor (imports nothing)": (BareActor, []),
            NUMPY_GYM: (BareActor, ["numpy", "gymnasium"]),
            NUMPY_GYM_TORCH: (BareActor, ["numpy", "gymnasium", "torch"]),
            "EnvRunner actor on its own (NumPy MLP)": (SingleAgentEnvRunner,
                                                       [config, config.get_env_creator(), 1]),
        }
        measured: dict[str, tuple[float, float]] = {}
        for name, (actor_class, actor_args) in baselines.items():
            starts = [actor_start(actor_class, *actor_args) for _ in range(args.repeats)]
            measured[name] = (median([s for s, _ in starts]), median([m for _, m in starts]))

    print_table("Start-up and memory (USS = private memory of the process)",
                ["what", "seconds", "USS MB", "goal"],
                [["ray.init(num_cpus=2, include_dashboard=False)", f"{ray_init_s:.2f}", "", ""],
                 ["build_algo(), 2 runners, first in this process", f"{build_s:.2f}", "",
                  f"<= {BUILD_GOAL_S:g} s: {goal(build_s <= BUILD_GOAL_S)}"],
                 ["build_algo(), 2 runners, second time", f"{second_build_s:.2f}", "", ""],
                 ["one runner actor of the algo, after build", "", f"{runner_uss_built:.0f}",
                  f"<= {RUNNER_USS_GOAL_MB:g} MB: {goal(runner_uss_built <= RUNNER_USS_GOAL_MB)}"],
                 ["one runner actor of the algo, after one train()", "", f"{runner_uss_trained:.0f}",
                  f"<= {RUNNER_USS_GOAL_MB:g} MB: {goal(runner_uss_trained <= RUNNER_USS_GOAL_MB)}"],
                 *([name, f"{seconds:.2f}", f"{memory:.0f}", ""]
                   for name, (seconds, memory) in measured.items())])
    (numpy_s, numpy_mb), (torch_s, torch_mb) = measured[NUMPY_GYM], measured[NUMPY_GYM_TORCH]
    print(f"Importing torch in a runner would add {torch_mb - numpy_mb:.0f} MB and "
          f"{torch_s - numpy_s:.1f} s of start-up to each one: {8 * (torch_mb - numpy_mb):.0f} MB "
          "for 8 runners.")


if __name__ == "__main__":
    main()
