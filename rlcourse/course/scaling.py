"""How sampling scales: env steps per second of an EnvRunnerGroup as runners are added.

`measure_throughput(config)` builds the config's EnvRunnerGroup (real Ray actors), gives it the
weights of a freshly built module, and times synchronous `sample()` calls, the call PPO's
`training_step` makes. `sweep()` measures several runner counts with one group of the largest count
(N runners: the first N sample at once, as `EnvRunnerGroup.sample()` asks them; the others wait and
use no CPU), so each runner process starts once, and returns rows with the speed-up over one runner
and the scaling efficiency (speed-up / runners; 1.0 is perfect).

On a 2-core machine CPU-bound CartPole stops gaining at about 2 runners, while an env that mostly
waits (`rlcourse.course.envs.LatencyBoundCartPole`) keeps gaining: waiting runners need no core.
"""

import contextlib
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import ray

from rlcourse.algorithms.algorithm_config import AlgorithmConfig
from rlcourse.course.envs import DEFAULT_STEP_LATENCY_S, LatencyBoundCartPole
from rlcourse.env.env_runner_group import EnvRunnerGroup
from rlcourse.env.registry import probe_spaces
from rlcourse.utils.resources import check_cpus, init_ray

TARGET_CALL_S = 0.1  # one sample() call: long enough to hide Ray's round trip, short enough to repeat
MAX_FRAGMENT = 4000  # steps per sub-env per call, at most


@dataclass(frozen=True)
class EnvKind:
    """An env to measure: what the chart calls it, and what `config.environment()` gets."""

    label: str
    env: Any
    env_config: dict


ENV_KINDS = {
    "cpu_bound": EnvKind("CPU-bound CartPole-v1", "CartPole-v1", {}),
    "latency_bound": EnvKind(f"latency-bound CartPole ({DEFAULT_STEP_LATENCY_S * 1000:g} ms/step)",
                             LatencyBoundCartPole, {"step_latency_s": DEFAULT_STEP_LATENCY_S}),
    # Continuous actions: the runners sample a Gaussian and clip it into the Box (SAC, PPO).
    "continuous": EnvKind("continuous-action Pendulum-v1", "Pendulum-v1", {}),
}


def scaling_config(num_env_runners: int, *, num_envs_per_env_runner: int = 1,
                   env_kind: str = "cpu_bound", gym_env_vectorize_mode: str = "SYNC",
                   num_cpus_per_env_runner: float = 0.25) -> AlgorithmConfig:
    """The runner settings of one measurement, as an algorithm would have them, with the small
    policy network the lessons train on CartPole: RLlib's default [256, 256] would add its own cost
    to every step measured."""
    if env_kind not in ENV_KINDS:
        raise ValueError(f"env_kind={env_kind!r}: use one of {sorted(ENV_KINDS)}.")
    kind = ENV_KINDS[env_kind]
    return (AlgorithmConfig()
            .environment(kind.env, env_config=dict(kind.env_config))
            .env_runners(num_env_runners=num_env_runners,
                         num_envs_per_env_runner=num_envs_per_env_runner,
                         num_cpus_per_env_runner=num_cpus_per_env_runner,
                         gym_env_vectorize_mode=gym_env_vectorize_mode)
            .rl_module(model_config={"fcnet_hiddens": [64, 64], "vf_share_layers": False}))


def fresh_weights(config: AlgorithmConfig) -> dict:
    """The inference weights of a newly built module for the config's env (untrained policy)."""
    from rlcourse.core.rl_module.rl_module import build_module  # torch: only the driver needs it
    observation_space, action_space = probe_spaces(config.get_env_creator(), config.env_config)
    return build_module(config, observation_space, action_space).get_state(inference_only=True)


def measure_throughput(config: AlgorithmConfig, duration_s: float = 2.0) -> float:
    """Env steps per second that the config's runners sample together, timed over `duration_s`.

    Start-up and a warm-up call are not timed. The call size is calibrated so that one call takes
    about TARGET_CALL_S, so slow and fast envs alike pay Ray's per-call cost only a little.
    """
    if config.num_env_runners < 1:
        raise ValueError(f"num_env_runners={config.num_env_runners}: the lab measures runner actors; "
                         "give 1 or more.")
    with started_group(config, duration_s) as group:
        return time_sampling(sampler(group.remote_env_runners),
                             config.num_env_runners * config.num_envs_per_env_runner, duration_s)


@contextlib.contextmanager
def started_group(config: AlgorithmConfig, duration_s: float) -> Iterator[EnvRunnerGroup]:
    """The config's EnvRunnerGroup, its actors up and holding fresh weights; stopped afterwards."""
    if duration_s <= 0:
        raise ValueError(f"duration_s={duration_s}: measure for a positive number of seconds.")
    config.validate()
    init_ray()
    check_cpus(config)  # Ray would wait forever for CPUs it does not have
    weights = fresh_weights(config)
    group = EnvRunnerGroup(config, config.get_env_creator())
    try:
        group.wait_until_ready()
        group.sync_weights(weights)  # Ray runs it before each actor's next request
        yield group
    finally:
        group.stop()


def sampler(runners: Sequence[ray.actor.ActorHandle]) -> Callable[[int], list[int]]:
    """`sample(steps)`: all `runners` sample `steps` env steps together, each its share, in one
    round of requests as `EnvRunnerGroup.sample()` makes them; returns each runner's env steps."""
    def sample(steps: int) -> list[int]:
        share = math.ceil(steps / len(runners))
        episodes = ray.get([runner.sample.remote(num_timesteps=share) for runner in runners])
        return [sum(map(len, chunks)) for chunks in episodes]
    return sample


def time_sampling(sample: Callable[[int], list[int]], sub_envs: int, duration_s: float) -> float:
    """Env steps per second of `sample(steps)` calls over `duration_s`, after a warm-up call that
    resets the envs and calls sized by `calibrate_fragment`."""
    sample(sub_envs)
    fragment = calibrate_fragment(lambda n: sample(n * sub_envs))
    steps, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < duration_s:
        steps += sum(sample(fragment * sub_envs))
    return steps / elapsed


def calibrate_fragment(sample: Callable[[int], Any]) -> int:
    """Steps per sub-env for a call of about TARGET_CALL_S. Calls grow from 16 steps (at most 8x
    per try, as short calls time poorly) until one takes half the target; they warm up the runners."""
    fragment = 16
    while True:
        start = time.perf_counter()
        sample(fragment)
        elapsed = time.perf_counter() - start
        scaled = int(fragment * min(8.0, TARGET_CALL_S / max(elapsed, 1e-9)))
        if elapsed >= TARGET_CALL_S / 2 or scaled >= MAX_FRAGMENT:
            return max(1, min(MAX_FRAGMENT, scaled))
        fragment = scaled


def scaling_rows(throughputs: Mapping[int, float]) -> list[dict]:
    """Rows of workers, env_steps_per_s, speedup (over 1 worker) and efficiency (speedup / workers).

    Without a 1-worker measurement, the smallest count's rate per worker stands in for it.
    """
    smallest = min(throughputs)
    one_worker = throughputs[smallest] / smallest
    rows = []
    for workers in sorted(throughputs):
        speedup = throughputs[workers] / one_worker
        rows.append({"workers": workers, "env_steps_per_s": throughputs[workers],
                     "speedup": speedup, "efficiency": speedup / workers})
    return rows


def sweep(workers: Sequence[int] = (1, 2, 4, 8), *, num_envs_per_env_runner: int = 1,
          env_kind: str = "cpu_bound", gym_env_vectorize_mode: str = "SYNC",
          duration_s: float = 2.0, num_cpus_per_env_runner: float | None = None,
          on_measured: Callable[[int, float], None] | None = None) -> list[dict]:
    """Measure each runner count in `workers` (see `measure_throughput`); return `scaling_rows`.

    By default each runner reserves an equal share of the cluster's CPUs at the largest count
    (0.25 of 2 CPUs for 8 runners), so every count fits. `on_measured(workers, env_steps_per_s)`
    is called after each measurement, for progress displays.
    """
    if not workers or min(workers) < 1:
        raise ValueError(f"workers={workers!r}: give runner counts >= 1, e.g. (1, 2, 4, 8).")
    init_ray()
    if num_cpus_per_env_runner is None:
        num_cpus_per_env_runner = min(1.0, ray.cluster_resources()["CPU"] / max(workers))
    config = scaling_config(max(workers), num_envs_per_env_runner=num_envs_per_env_runner,
                            env_kind=env_kind, gym_env_vectorize_mode=gym_env_vectorize_mode,
                            num_cpus_per_env_runner=num_cpus_per_env_runner)
    throughputs = {}
    with started_group(config, duration_s) as group:
        for n in sorted(set(workers)):
            throughputs[n] = time_sampling(sampler(group.remote_env_runners[:n]),
                                           n * num_envs_per_env_runner, duration_s)
            if on_measured is not None:
                on_measured(n, throughputs[n])
    return scaling_rows(throughputs)


def format_rows(rows: Sequence[Mapping[str, float]]) -> str:
    """The rows as a small text table, for printing in a notebook or terminal."""
    lines = [f"{'workers':>7} {'env steps/s':>12} {'speed-up':>9} {'efficiency':>10}"]
    lines += [f"{r['workers']:>7} {r['env_steps_per_s']:>12,.0f} {r['speedup']:>8.2f}x "
              f"{r['efficiency']:>10.0%}" for r in rows]
    return "\n".join(lines)
