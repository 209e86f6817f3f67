"""Sampling speed: one EnvRunner against the loop a person would write by hand.

What is measured: environment steps per second on CartPole-v1 with N = 1, 8 and 32 sub-envs, for
  * a plain torch loop (CleanRL style): `gym.make_vec(..., vectorization_mode="sync")`, a
    [256, 256] tanh policy MLP (RLlib's default size; rlcourse's default is [64, 64]) in torch
    under `torch.no_grad()`, `Categorical` sampling, and the rollout written into preallocated
    arrays;
  * the same plain loop with the MLP and the sampling written in NumPy;
  * `SingleAgentEnvRunner.sample(num_timesteps=...)` (rlcourse/env/single_agent_env_runner.py),
    which does the same work and also cuts the arrays into `SingleAgentEpisode`s.
All three hold the same weights (from a freshly built [256, 256] torch module) and run in this process
with one BLAS/torch thread, as a runner actor does. Each is warmed up, then timed `--repeats`
times (interleaved, so a slow moment of the machine hits all three alike); the table shows medians.

Goal: the EnvRunner is at least as fast as both plain loops (ratio >= 1.0x) at every size: the
framework's job is to cost nothing on top of the loop it replaces.

    python benchmarks/sampling.py [--steps 8192] [--repeats 5]
"""

# ruff: noqa: E402  (imports follow the thread pinning below, which must come before NumPy)
import os

# A Ray runner actor gets OMP_NUM_THREADS=1 from Ray; give this process the same single BLAS thread
# (before NumPy is imported) so the NumPy loop and the EnvRunner compute like they do in an actor.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
from collections.abc import Callable

import gymnasium as gym
import numpy as np
import torch
from common import goal, median, print_table, timed
from gymnasium.vector import AutoresetMode
from torch import nn
from torch.distributions import Categorical

from rlcourse.algorithms.ppo.ppo import PPOConfig
from rlcourse.core.rl_module.rl_module import build_module
from rlcourse.env.single_agent_env_runner import SingleAgentEnvRunner

ENV_ID = "CartPole-v1"
MODEL_CONFIG = {"fcnet_hiddens": [256, 256]}
SIZES = (1, 8, 32)
SEED = 0


def make_vec_env(num_envs: int) -> gym.vector.VectorEnv:
    # SAME_STEP autoreset, as the EnvRunner uses: every step of the loop is a real transition.
    return gym.make_vec(ENV_ID, num_envs=num_envs, vectorization_mode="sync",
                        vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP})


def policy_weights() -> dict[str, np.ndarray]:
    """The policy half (`pi.*`) of a freshly built [256, 256] module, as NumPy arrays."""
    torch.manual_seed(SEED)
    env = gym.make(ENV_ID)
    module = build_module(PPOConfig().rl_module(model_config=MODEL_CONFIG), env.observation_space,
                          env.action_space)
    env.close()
    return module.get_state(inference_only=True)


class PlainLoop:
    """What a person writes: a sync vector env, a policy, and the rollout in preallocated arrays."""

    def __init__(self, num_envs: int, weights: dict[str, np.ndarray]):
        self.envs = make_vec_env(num_envs)
        self.num_envs = num_envs
        self.obs, _ = self.envs.reset(seed=SEED)

    def act(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Sampled actions and their log-probabilities for a batch of observations."""
        raise NotImplementedError

    def sample(self, num_steps: int) -> int:
        """Step all sub-envs until `num_steps` env steps are stored; return how many."""
        steps, n = num_steps // self.num_envs, self.num_envs
        obs = np.empty((steps + 1, n, 4), np.float32)
        actions = np.empty((steps, n), np.int64)
        logps = np.empty((steps, n), np.float32)
        rewards = np.empty((steps, n), np.float32)
        dones = np.empty((steps, n), bool)
        obs[0] = self.obs
        for t in range(steps):
            actions[t], logps[t] = self.act(obs[t])
            obs[t + 1], rewards[t], terminated, truncated, _ = self.envs.step(actions[t])
            dones[t] = terminated | truncated
        self.obs = obs[steps]
        return steps * n


class PlainTorchLoop(PlainLoop):
    """CleanRL style: an nn.Sequential policy under torch.no_grad(), Categorical sampling."""

    def __init__(self, num_envs: int, weights: dict[str, np.ndarray]):
        super().__init__(num_envs, weights)
        self.actor = nn.Sequential(nn.Linear(4, 256), nn.Tanh(), nn.Linear(256, 256), nn.Tanh(),
                                   nn.Linear(256, 2))
        self.actor.load_state_dict({k.removeprefix("pi."): torch.as_tensor(v)
                                    for k, v in weights.items()})

    def act(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        dist = Categorical(logits=self.actor(torch.as_tensor(obs)))
        action = dist.sample()
        return action.numpy(), dist.log_prob(action).numpy()

    def sample(self, num_steps: int) -> int:
        with torch.no_grad():  # once around the whole rollout, as CleanRL does
            return super().sample(num_steps)


class PlainNumpyLoop(PlainLoop):
    """The same loop with the MLP and the sampling in NumPy (no torch call per step)."""

    def __init__(self, num_envs: int, weights: dict[str, np.ndarray]):
        super().__init__(num_envs, weights)
        self.layers = [(weights[f"pi.{i}.weight"].T.copy(), weights[f"pi.{i}.bias"])
                       for i in (0, 2, 4)]
        self.rng = np.random.default_rng(SEED)

    def act(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        (w1, b1), (w2, b2), (w3, b3) = self.layers
        logits = np.tanh(np.tanh(obs @ w1 + b1) @ w2 + b2) @ w3 + b3
        logp_all = logits - logits.max(axis=1, keepdims=True)
        logp_all -= np.log(np.exp(logp_all).sum(axis=1, keepdims=True))
        # Inverse-CDF sampling: the first action whose cumulative probability passes u.
        u = self.rng.random((len(obs), 1))
        action = np.minimum((np.exp(logp_all).cumsum(axis=1) < u).sum(axis=1), 1)
        return action, logp_all[np.arange(len(obs)), action]


class RLCourseRunner:
    """rlcourse's EnvRunner with the same weights, behind the same `sample(num_steps)` call."""

    def __init__(self, num_envs: int, weights: dict[str, np.ndarray]):
        config = (PPOConfig().environment(ENV_ID).rl_module(model_config=MODEL_CONFIG)
                  .env_runners(num_envs_per_env_runner=num_envs).debugging(seed=SEED))
        self.runner = SingleAgentEnvRunner(config, config.get_env_creator())
        self.runner.set_weights(weights)

    def sample(self, num_steps: int) -> int:
        episodes = self.runner.sample(num_timesteps=num_steps)
        self.runner.get_metrics()  # forget finished-episode stats, as the runner group does
        return sum(len(episode) for episode in episodes)


def measure(samplers: dict[str, Callable[[int], int]], num_steps: int, repeats: int
            ) -> dict[str, float]:
    """Median env steps/s of each sampler; one warm-up call each, then interleaved repeats."""
    for sample in samplers.values():
        sample(num_steps)
    rates: dict[str, list[float]] = {name: [] for name in samplers}
    for _ in range(repeats):
        for name, sample in samplers.items():
            steps, seconds = timed(lambda sample=sample: sample(num_steps))
            rates[name].append(steps / seconds)
    return {name: median(values) for name, values in rates.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8192, help="env steps per timed call")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per sampler and size")
    args = parser.parse_args()
    torch.set_num_threads(1)  # one thread, as in a runner actor (Ray sets OMP_NUM_THREADS=1)

    weights = policy_weights()
    rows, ratios = [], {}
    for n in SIZES:
        samplers = {name: cls(n, weights).sample for name, cls in
                    (("torch", PlainTorchLoop), ("numpy", PlainNumpyLoop), ("runner", RLCourseRunner))}
        rate = measure(samplers, args.steps, args.repeats)
        ratios[n] = (rate["runner"] / rate["torch"], rate["runner"] / rate["numpy"])
        rows.append([n, f"{rate['torch']:,.0f}", f"{rate['numpy']:,.0f}", f"{rate['runner']:,.0f}",
                     f"{ratios[n][0]:.2f}x", f"{ratios[n][1]:.2f}x", goal(min(ratios[n]) >= 1.0)])

    print_table(f"EnvRunner.sample vs a plain loop, {ENV_ID}, median env steps/s over "
                f"{args.repeats} x {args.steps:,} steps (1 thread)",
                ["sub-envs", "plain torch loop steps/s", "plain numpy loop steps/s",
                 "EnvRunner steps/s", "ratio vs torch loop", "ratio vs numpy loop", "goal"],
                rows)
    print("Goal: EnvRunner >= 1.0x the plain loop (both columns) at each size.")
    missed = [n for n in SIZES if min(ratios[n]) < 1.0]
    print("Result: goal met at every size." if not missed else
          f"Result: goal missed at sub-envs = {', '.join(map(str, missed))}.")


if __name__ == "__main__":
    main()
