"""Sampling speed of external simulators (issue 35): N simulator processes running client.py, each
connected to its own EnvRunnerServerForExternalInference actor, against N in-process runner actors
(SingleAgentEnvRunner, one CartPole sub-env each), both with the same [64, 64] policy; and the
bytes each env step costs on the wire (both directions, headers included).

What is measured: env steps per second of `EnvRunnerGroup.sample()` (what PPO's training_step
calls), after a warm-up, over `--seconds` of sampling; no training. Clients send their episodes
every `--steps-per-batch` env steps with EPISODES_AND_GET_STATE (one weights answer per batch).

    python benchmarks/external_sampling.py [--clients 1 2] [--seconds 10]
"""

import argparse
import subprocess
import sys
import time

import gymnasium as gym
import numpy as np
from common import print_table, ray_session

from rlcourse.algorithms.ppo.ppo import PPOConfig
from rlcourse.env.external import client
from rlcourse.env.external.env_runner_server_for_external_inference import (
    EnvRunnerServerForExternalInference,
)

TOKEN = "benchmark"


def config(n: int, external: bool) -> PPOConfig:
    config = (PPOConfig().env_runners(num_env_runners=n, num_cpus_per_env_runner=0.5)
              .training(train_batch_size_per_learner=1000)
              .rl_module(model_config={"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh"}))
    if not external:
        return config.environment("CartPole-v1")
    return (config.environment(observation_space=gym.spaces.Box(-np.inf, np.inf, (4,), np.float32),
                               action_space=gym.spaces.Discrete(2),
                               env_config={"port": 0, "token": TOKEN})
            .env_runners(env_runner_cls=EnvRunnerServerForExternalInference))


def steps_per_s(n: int, external: bool, seconds: float, steps_per_batch: int) -> tuple[float, float]:
    """(env steps/s, wire bytes per env step; NaN in-process) of N runners."""
    algo = config(n, external).build_algo()
    group, simulators = algo.env_runner_group, []
    try:
        if external:
            ports = [a[1] for a in group.foreach_env_runner(lambda runner: runner.address)]
            simulators = [subprocess.Popen(
                [sys.executable, client.__file__, "--port", str(port), "--token", TOKEN,
                 "--steps-per-batch", str(steps_per_batch)], stdout=subprocess.DEVNULL)
                for port in ports]
        group.sample()  # warm-up (and the clients' connecting)
        wire_before = sum(group.foreach_env_runner(lambda r: getattr(r, "wire_bytes", 0)))
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            episodes, _ = group.sample()
            steps += sum(map(len, episodes))
        elapsed = time.perf_counter() - start
        wire = sum(group.foreach_env_runner(lambda r: getattr(r, "wire_bytes", 0))) - wire_before
        return steps / elapsed, wire / steps if external else float("nan")
    finally:
        algo.stop()
        for simulator in simulators:
            simulator.terminate()
            simulator.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--steps-per-batch", type=int, default=500)
    args = parser.parse_args()
    rows = []
    with ray_session():
        for n in args.clients:
            inside, _ = steps_per_s(n, False, args.seconds, args.steps_per_batch)
            outside, wire = steps_per_s(n, True, args.seconds, args.steps_per_batch)
            rows.append([n, f"{inside:,.0f}", f"{outside:,.0f}", f"{outside / inside:.2f}",
                         f"{wire:,.0f}"])
    print_table("CartPole-v1, [64, 64] policy: env steps/s of EnvRunnerGroup.sample()",
                ["runners (= clients)", "in-process runners", "external clients", "ratio",
                 "wire bytes/env step"], rows)


if __name__ == "__main__":
    main()
