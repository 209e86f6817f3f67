"""Speed of external simulators (issue 35): N simulator processes running client.py, each
connected to its own EnvRunnerServerForExternalInference actor, against N in-process runner actors
(SingleAgentEnvRunner, one CartPole sub-env each), both with the same [64, 64] policy; and the
bytes each env step costs on the wire (both directions, headers included); external clients with
client-side inference (the policy in the simulator's process, whole episodes sent) and with
server-side inference (`--inference server`: one GET_ACTION -> ACTION round trip per env step).

What is measured: env steps per second of `EnvRunnerGroup.sample()` (what PPO's training_step
calls), after a warm-up, over `--seconds` of sampling; no training. Clients send their episodes
every `--steps-per-batch` env steps with EPISODES_AND_GET_STATE (one weights answer per batch).
Latency per env step, for one client.py process against a runner in this process (no Ray;
rlcourse/course/external_simulators.py's time_inference, which lesson 14 runs too): the time from an
observation to its action, client-side (the local forward pass) or server-side (the
GET_ACTION -> ACTION round trip over TCP), median and 95th percentile over `--latency-steps`
env steps, with that client's env steps/s.
With `--learn`, also PPO with the course's CartPole settings (tuned_examples/ppo/cartpole_ppo.py,
one sub-env per runner) to `--target` with 2 in-process runners and with 2 external clients: env
steps and wall time to the target (the learner's time dominates on a busy machine).

    python benchmarks/external_sampling.py [--clients 1 2] [--seconds 10] [--latency-steps 5000]
                                           [--learn --target 450]
"""

import argparse
import os
import subprocess
import sys
import time

import gymnasium as gym
import numpy as np
from common import course_cartpole_config, print_table, ray_session

from rlcourse.algorithms.ppo.ppo import PPOConfig
from rlcourse.core.rl_module.rl_module import build_module
from rlcourse.course.external_simulators import time_inference
from rlcourse.env.external import client
from rlcourse.env.external.env_runner_server_for_external_inference import (
    TOKEN_ENV_VAR,
    EnvRunnerServerForExternalInference,
)

os.environ.setdefault(TOKEN_ENV_VAR, "benchmark")  # the runners' and the clients' shared secret
SPACES = (gym.spaces.Box(-np.inf, np.inf, (4,), np.float32), gym.spaces.Discrete(2))  # CartPole's


def config(n: int, external: bool) -> PPOConfig:
    config = (course_cartpole_config("ppo").copy()
              .env_runners(num_env_runners=n, num_envs_per_env_runner=1))
    if not external:
        return config
    return (config.environment(None, observation_space=SPACES[0], action_space=SPACES[1],
                               env_config={"port": 0})
            .env_runners(env_runner_cls=EnvRunnerServerForExternalInference))


def start_simulators(algo, steps_per_batch: int, inference: str = "client"
                     ) -> list[subprocess.Popen]:
    """One client.py process (CartPole-v1) per server runner of `algo`."""
    ports = [a[1] for a in algo.env_runner_group.foreach_env_runner(lambda runner: runner.address)]
    return [subprocess.Popen([sys.executable, client.__file__, "--port", str(port), "--inference",
                              inference, "--steps-per-batch", str(steps_per_batch)],
                             stdout=subprocess.DEVNULL) for port in ports]


def steps_per_s(n: int, inference: str | None, seconds: float, steps_per_batch: int
                ) -> tuple[float, float]:
    """(env steps/s, wire bytes per env step; NaN in-process) of N runners: in-process runners
    (`inference` None) or external clients with client- or server-side inference."""
    external = inference is not None
    algo = config(n, external).build_algo()
    group = algo.env_runner_group
    simulators = start_simulators(algo, steps_per_batch, inference) if external else []
    try:
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


def learn(external: bool, target: float, steps_per_batch: int) -> tuple[int, float]:
    """(env steps, seconds) for PPO with 2 runners to reach `target` (or 200k env steps)."""
    algo = config(2, external).build_algo()
    simulators = start_simulators(algo, steps_per_batch) if external else []
    try:
        start, result = time.perf_counter(), {}
        while not result or (result["env_runners"]["episode_return_mean"] < target
                             and result["num_env_steps_sampled_lifetime"] < 200_000):
            result = algo.train()
        return result["num_env_steps_sampled_lifetime"], time.perf_counter() - start
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
    parser.add_argument("--learn", action="store_true")
    parser.add_argument("--target", type=float, default=450.0)
    parser.add_argument("--latency-steps", type=int, default=5000)
    args = parser.parse_args()
    rows = []
    with ray_session():
        for n in args.clients:
            inside, _ = steps_per_s(n, None, args.seconds, args.steps_per_batch)
            outside, wire = steps_per_s(n, "client", args.seconds, args.steps_per_batch)
            server, server_wire = steps_per_s(n, "server", args.seconds, args.steps_per_batch)
            rows.append([n, f"{inside:,.0f}", f"{outside:,.0f}", f"{server:,.0f}",
                         f"{outside / inside:.2f}", f"{server / inside:.2f}", f"{wire:,.0f}",
                         f"{server_wire:,.0f}"])
    print_table("CartPole-v1, [64, 64] policy: env steps/s of EnvRunnerGroup.sample()",
                ["runners (= clients)", "in-process runners", "external, client-side inference",
                 "external, server-side inference", "ratio client-side", "ratio server-side",
                 "wire bytes/env step client-side", "server-side"], rows)
    rows = []
    weights = build_module(config(1, True), *SPACES).get_state(inference_only=True)
    for inference in ("client", "server"):
        row = time_inference(config(1, True), weights, inference, args.latency_steps)
        rows.append([row["inference"], f"{row['median_us']:,.0f}", f"{row['p95_us']:,.0f}",
                     f"{row['env_steps_per_s']:,.0f}"])
    print_table(f"One client.py process, CartPole-v1, {args.latency_steps:,} env steps: "
                "observation -> action",
                ["inference", "median us", "p95 us", "env steps/s"], rows)
    if args.learn:
        with ray_session():
            rows = [[name, *learn(external, args.target, args.steps_per_batch)]
                    for name, external in (("2 in-process runners", False),
                                           ("2 external clients", True))]
        print_table(f"PPO on CartPole-v1 to a return of {args.target:.0f}",
                    ["sampling", "env steps", "seconds"],
                    [[name, f"{steps:,}", f"{seconds:.1f}"] for name, steps, seconds in rows])


if __name__ == "__main__":
    main()
