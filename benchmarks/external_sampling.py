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
steps and wall time to the target (the learner's time dominates on a busy machine); with `--rllib`
also RLlib's own TCP client example (PPO, 2 runner actors, 2 client processes; its settings, not
the course's), in the same Ray. The time runs from the first train() call (the clients started).
RLlib's server runner needs msgpack and msgpack_numpy (both in requirements.lock).

    python benchmarks/external_sampling.py [--clients 1 2] [--seconds 10] [--latency-steps 5000]
                                           [--learn --target 450 [--rllib]]
"""

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import time

import gymnasium as gym
import numpy as np
from common import course_cartpole_config, print_table, ray_session

from rlcourse.algorithms.ppo.ppo import PPOConfig
from rlcourse.core.rl_module.rl_module import build_module
from rlcourse.course.external_simulators import time_inference
from rlcourse.course.side_by_side import env_steps_sampled, episode_return
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


def train_to(algo, target: float, simulators: list[subprocess.Popen], time_limit_s: float
             ) -> tuple[int, float, float]:
    """(env steps, seconds, mean return) for `algo` (rlcourse's or RLlib's) to reach a mean return
    of `target` (or 400k env steps, or `time_limit_s`); then stops it and ends its simulators."""
    try:
        start, result = time.perf_counter(), {}
        while not result or not (episode_return(result) >= target or env_steps_sampled(result)
                                 >= 400_000 or time.perf_counter() - start > time_limit_s):
            result = algo.train()
        return env_steps_sampled(result), time.perf_counter() - start, episode_return(result)
    finally:
        for simulator in simulators:
            simulator.terminate()
            simulator.wait(timeout=10)
        algo.stop()


def learn(external: bool, args: argparse.Namespace) -> tuple[int, float, float]:
    """rlcourse's PPO with the course's CartPole settings and 2 runners (in-process or external)."""
    algo = config(2, external).build_algo()
    simulators = start_simulators(algo, args.steps_per_batch) if external else []
    return train_to(algo, args.target, simulators, args.time_limit)


def free_base_port() -> int:
    """A base port whose runners 1 and 2 (base + 1, base + 2) can listen: RLlib takes no port 0."""
    for base in range(25_000, 32_000, 3):
        with contextlib.suppress(OSError), socket.create_server(("127.0.0.1", base + 1)), \
                socket.create_server(("127.0.0.1", base + 2)):
            return base
    raise RuntimeError("no free ports in 25000-32000")


def learn_rllib(args: argparse.Namespace) -> tuple[int, float, float]:
    """RLlib's example env_connecting_to_rllib_w_tcp_client.py (its settings: PPO's defaults, 10
    epochs, vf_loss_coeff 0.01, a shared value layer) with 2 runner actors, each served by RLlib's
    dummy CartPole client (torch inference in the client) in a process of its own."""
    from ray.rllib.algorithms.ppo import PPOConfig as RLlibPPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
    from ray.rllib.env.external.env_runner_server_for_external_inference import (
        EnvRunnerServerForExternalInference as RLlibServer,
    )

    base = free_base_port()
    algo = (RLlibPPOConfig().environment(observation_space=SPACES[0], action_space=SPACES[1],
                                         env_config={"port": base})
            .env_runners(env_runner_cls=RLlibServer, num_env_runners=2)
            .training(num_epochs=10, vf_loss_coeff=0.01)
            .rl_module(model_config=DefaultModelConfig(vf_share_layers=True)).build_algo())
    client_code = ("from ray.rllib.examples.envs.classes.utils.dummy_external_client import "
                   "_dummy_external_client as run; run({})")
    simulators = [subprocess.Popen([sys.executable, "-c", client_code.format(base + i)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                  for i in (1, 2)]
    return train_to(algo, args.target, simulators, args.time_limit)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, nargs="*", default=[1, 2], help="none: skip")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--steps-per-batch", type=int, default=500)
    parser.add_argument("--learn", action="store_true")
    parser.add_argument("--target", type=float, default=450.0)
    parser.add_argument("--time-limit", type=float, default=600.0, help="seconds per --learn run")
    parser.add_argument("--rllib", action="store_true", help="with --learn: RLlib's TCP client "
                        "example too (env_connecting_to_rllib_w_tcp_client.py)")
    parser.add_argument("--latency-steps", type=int, default=5000)
    args = parser.parse_args()
    rows = []
    with ray_session() if args.clients else contextlib.nullcontext():
        for n in args.clients:
            inside, _ = steps_per_s(n, None, args.seconds, args.steps_per_batch)
            outside, wire = steps_per_s(n, "client", args.seconds, args.steps_per_batch)
            server, server_wire = steps_per_s(n, "server", args.seconds, args.steps_per_batch)
            rows.append([n, f"{inside:,.0f}", f"{outside:,.0f}", f"{server:,.0f}",
                         f"{outside / inside:.2f}", f"{server / inside:.2f}", f"{wire:,.0f}",
                         f"{server_wire:,.0f}"])
    if rows:
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
        runs = {"rlcourse, 2 in-process runners": lambda: learn(False, args),
                "rlcourse, 2 external clients (client.py)": lambda: learn(True, args)}
        if args.rllib:
            runs["RLlib's TCP client example, 2 external clients"] = lambda: learn_rllib(args)
        rows = []
        with ray_session():
            for name, run in runs.items():
                rows.append([name, *run()])
                print("{}: {:,} env steps, {:.1f} s, return {:.0f}".format(*rows[-1]), flush=True)
        print_table(f"PPO on CartPole-v1 to a return of {args.target:.0f} (or --time-limit)",
                    ["sampling", "env steps", "seconds", "return reached"],
                    [[name, f"{steps:,}", f"{seconds:.1f}", f"{ret:.0f}"]
                     for name, steps, seconds, ret in rows])


if __name__ == "__main__":
    main()
