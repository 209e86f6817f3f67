"""Multi-agent sampling speed: N agents in one MultiAgentEnv against N single-agent sub-envs.

What is measured: steps per second of the single-agent env (one agent step = one step of one copy)
  * `EnvRunner` with N sub-envs (a SYNC vector env, one forward pass per step), against
  * `MultiAgentEnvRunner` with one `make_multi_agent(env)` env of N agents, all mapped to one module
    (one forward pass per step), returning MultiAgentEpisodes; and the same with the agents split
    over two modules (two forward passes per step).
Two envs: Pendulum-v1, whose episodes all last 200 steps (the N agents step in lockstep: this
measures what the multi-agent data path costs), and CartPole-v1 under a random policy, whose agents
finish at different times and wait for the last one (RLlib's make_multi_agent semantics), so an env
step moves fewer agents ("live" column: mean agents per env step) and the per-step costs weigh more.
All use the same [64, 64] policy weights, in this process, with one BLAS thread as in a runner actor.
Each sampler is warmed up, then timed `--repeats` times, interleaved; the table shows medians of the
process's CPU time per step (the machine may be shared: CPU time is what this process spent).

Goal (issue 17): multi-agent with one module >= 0.8x the steps/s of the single-agent runner at
each N (like for like: one policy for N agents against one policy for N sub-envs).

    python benchmarks/multi_agent_sampling.py [--steps 8192] [--repeats 5]
"""

# ruff: noqa: E402  (imports follow the thread pinning below, which must come before NumPy)
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import time
from collections.abc import Callable

import numpy as np
from common import goal, median, print_table

from rlcourse.algorithms.ppo.ppo import PPOConfig
from rlcourse.env.multi_agent_env import make_multi_agent
from rlcourse.env.multi_agent_env_runner import MultiAgentEnvRunner
from rlcourse.env.registry import register_env
from rlcourse.env.single_agent_env_runner import SingleAgentEnvRunner

SIZES = (1, 8, 32)
SEED = 0
ENVS = {"Pendulum-v1": (3, 2), "CartPole-v1": (4, 2)}  # observation size, policy output size


def policy_weights(obs_dim: int, out_dim: int, hidden: int = 64) -> dict[str, np.ndarray]:
    """Random [64, 64] tanh policy weights in the torch module's layout (no torch needed)."""
    rng = np.random.default_rng(SEED)
    sizes, weights = [obs_dim, hidden, hidden, out_dim], {}
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        weights[f"pi.{2 * i}.weight"] = rng.normal(0, fan_in ** -0.5, (fan_out, fan_in)).astype(
            np.float32)
        weights[f"pi.{2 * i}.bias"] = np.zeros(fan_out, np.float32)
    return weights


def single_agent(env_id: str, n: int, weights: dict) -> Callable[[int], tuple[int, int]]:
    config = (PPOConfig().environment(env_id).env_runners(num_envs_per_env_runner=n)
              .debugging(seed=SEED))
    runner = SingleAgentEnvRunner(config, config.get_env_creator())
    runner.set_weights(weights)

    def sample(num_steps: int) -> tuple[int, int]:
        episodes = runner.sample(num_timesteps=num_steps)
        runner.get_metrics()
        steps = sum(len(e) for e in episodes)
        return steps, steps
    return sample


def multi_agent(env_id: str, n: int, weights: dict, num_modules: int
                ) -> Callable[[int], tuple[int, int]]:
    register_env(f"MultiAgent-{env_id}", make_multi_agent(env_id))
    config = (PPOConfig().environment(f"MultiAgent-{env_id}", env_config={"num_agents": n})
              .multi_agent(policies={f"p{k}" for k in range(num_modules)},
                           policy_mapping_fn=lambda agent_id, episode: f"p{agent_id % num_modules}")
              .debugging(seed=SEED))
    runner = MultiAgentEnvRunner(config, config.get_env_creator())
    runner.set_weights({f"p{k}": weights for k in range(num_modules)})

    def sample(num_steps: int) -> tuple[int, int]:
        episodes = runner.sample(num_timesteps=max(1, num_steps // n))  # env steps of N agents
        runner.get_metrics()
        return sum(e.agent_steps() for e in episodes), sum(len(e) for e in episodes)
    return sample


def measure(samplers: dict[str, Callable[[int], tuple[int, int]]], num_steps: int, repeats: int
            ) -> tuple[dict[str, float], dict[str, float]]:
    """Median agent steps per CPU second of each sampler, and its mean agents per env step."""
    for sample in samplers.values():
        sample(num_steps)
    rates: dict[str, list[float]] = {name: [] for name in samplers}
    live: dict[str, float] = {}
    for _ in range(repeats):
        for name, sample in samplers.items():
            start = time.process_time()
            agent_steps, env_steps = sample(num_steps)
            rates[name].append(agent_steps / (time.process_time() - start))
            live[name] = agent_steps / env_steps
    return {name: median(values) for name, values in rates.items()}, live


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8192, help="agent steps per timed call")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per sampler and size")
    args = parser.parse_args()
    rows, missed = [], []
    for env_id, (obs_dim, out_dim) in ENVS.items():
        weights = policy_weights(obs_dim, out_dim)
        for n in SIZES:
            samplers = {"single": single_agent(env_id, n, weights),
                        "multi": multi_agent(env_id, n, weights, 1)}
            if n > 1:
                samplers["multi2"] = multi_agent(env_id, n, weights, 2)
            rate, live = measure(samplers, args.steps, args.repeats)
            ratios = [rate[k] / rate["single"] for k in ("multi", "multi2") if k in rate]
            met = ratios[0] >= 0.8  # like for like: one policy, as the N sub-envs have
            missed += [] if met else [f"{env_id} N={n}"]
            rows.append([env_id, n, f"{live['multi']:.1f}", f"{rate['single']:,.0f}",
                         f"{rate['multi']:,.0f}", f"{ratios[0]:.2f}x",
                         f"{rate['multi2']:,.0f}" if n > 1 else "-",
                         f"{ratios[1]:.2f}x" if n > 1 else "-", goal(met)])
    print_table(f"Agent steps per CPU second, median of {args.repeats} x {args.steps:,} steps "
                "(1 thread)",
                ["env", "N", "live", "EnvRunner, N sub-envs", "MultiAgentEnvRunner, 1 module",
                 "ratio", "2 modules", "ratio", "goal"], rows)
    print("Goal: multi-agent (1 module, like the single-agent runner's one policy) >= 0.8x the "
          "single-agent runner at each N. The 2-module column (two forward passes per step) is "
          "shown for information.")
    print("Result: goal met everywhere." if not missed else
          f"Result: goal missed at {', '.join(missed)}.")


if __name__ == "__main__":
    main()
