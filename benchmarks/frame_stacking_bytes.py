"""Frame stacking and the CNN on runners: what crosses the object store, and what torch would cost.

  * Bytes per train batch (default 4,000 env steps) that runners send to the learner, as Ray
    serializes them (pickle protocol 5): episodes of single frames (FrameStackingEnvToModule, the
    learner rebuilds the stacks with FrameStackingLearner) against episodes of stacked frames (what
    runners would send if they stacked, e.g. with a frame-stacking env wrapper).
  * One runner actor with RLlib's default 84x84 CNN: start-up seconds and private memory (USS) with
    the CNN in NumPy (the default) and in torch (`rl_module_class=DefaultActorCriticModule`), the
    time of one forward pass over its sub-envs' stacks in each, and the env steps/s of a train
    batch's sample, beside RLlib's SingleAgentEnvRunner as an actor of the same size with the same
    env, frame stacking and network (RLlib's conv_filters with the course's padding, a 256-unit
    layer before the heads). Each actor asks Ray for one CPU, so each computes on one thread.

Atari Pong (ale-py, RLlib's preprocessing: 84x84x1 frames) when ale-py is installed, else the
course's PixelGridWorld drawn at 84x84x3.

    python benchmarks/frame_stacking_bytes.py [--steps 4000] [--num-frames 4] [--no-rllib]
"""

import argparse
import os
import pickle
import time

import gymnasium as gym
import ray
from common import median, print_table, ray_session, uss_mb

from rlcourse.algorithms.ppo.ppo import PPOConfig
from rlcourse.connectors.env_to_module import FrameStackingEnvToModule
from rlcourse.connectors.learner import FrameStackingLearner
from rlcourse.core.rl_module.cnn_encoder import DEFAULT_FILTERS
from rlcourse.core.rl_module.rl_module import DefaultActorCriticModule
from rlcourse.course.pixel_grid_world import PixelGridWorld
from rlcourse.env.single_agent_env_runner import SingleAgentEnvRunner
from rlcourse.env.wrappers.atari_wrappers import wrap_atari_for_new_api_stack

NUM_ENVS = 4


def pong(context: dict) -> gym.Env:
    return wrap_atari_for_new_api_stack(
        gym.make("ale_py:ALE/Pong-v5", frameskip=1, obs_type="grayscale"))


def pixel_grid(context: dict) -> gym.Env:
    return PixelGridWorld({"size": 7, "pixels_per_cell": 12, "max_episode_steps": 100})


def config(num_frames: int) -> PPOConfig:
    try:
        import ale_py  # noqa: F401
        env = pong
    except ImportError:
        env = pixel_grid
    return (PPOConfig().environment(env)
            .env_runners(num_envs_per_env_runner=NUM_ENVS, sample_timeout_s=3600.0,
                         env_to_module_connector=lambda e: FrameStackingEnvToModule(num_frames))
            .rl_module(model_config={"fcnet_hiddens": [256], "vf_share_layers": True}))


def forward_ms(runner: SingleAgentEnvRunner) -> float:
    """Median ms of one forward pass over the runner's current stacks (run inside the actor)."""
    times = []
    for _ in range(30):
        start = time.perf_counter()
        runner.module.forward_exploration(runner.frame_stacking.stacked)
        times.append(time.perf_counter() - start)
    return 1000 * median(times)


def timed_sample(actor: ray.actor.ActorHandle, steps: int) -> tuple[float, list]:
    """(env steps/s, episodes) of one `steps`-step sample by a runner actor."""
    start = time.perf_counter()
    episodes = ray.get(actor.sample.remote(num_timesteps=steps))
    return sum(map(len, episodes)) / (time.perf_counter() - start), episodes


def rllib_steps_per_s(num_frames: int, steps: int) -> float:
    """RLlib's SingleAgentEnvRunner as an actor on the same env with the same CNN: env steps/s."""
    from ray.rllib.algorithms.ppo import PPOConfig as RLlibPPOConfig
    from ray.rllib.connectors.env_to_module.frame_stacking import (
        FrameStackingEnvToModule as RLlibStacking,
    )
    from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner as RLlibRunner

    filters = [[*layer, "same"] for layer in DEFAULT_FILTERS[(84, 84)]]
    filters[-1][-1] = "valid"  # as the course pads: 84x84 down to 1x1x256
    from ray.tune.registry import register_env

    env = config(num_frames).env
    register_env(env.__name__, env)
    cfg = (RLlibPPOConfig().environment(env.__name__)
           .env_runners(num_env_runners=0, num_envs_per_env_runner=NUM_ENVS,
                        env_to_module_connector=lambda *_: RLlibStacking(num_frames=num_frames))
           .rl_module(model_config={"conv_filters": filters, "head_fcnet_hiddens": [256],
                                    "vf_share_layers": True}))
    actor = ray.remote(RLlibRunner).options(num_cpus=1).remote(config=cfg)
    try:
        ray.get(actor.sample.remote(num_timesteps=200))
        return timed_sample(actor, steps)[0]
    finally:
        ray.kill(actor)


def runner_actor(cfg: PPOConfig, steps: int) -> tuple[float, float, float, float, list]:
    """Start one runner actor; return (seconds to its first answer, USS MB after a 200-step
    sample, forward ms, env steps/s and episodes of a `steps`-step sample), then kill it."""
    start = time.perf_counter()
    actor = ray.remote(SingleAgentEnvRunner).options(num_cpus=1).remote(
        cfg, cfg.get_env_creator(), 1)
    pid = ray.get(actor.__ray_call__.remote(lambda self: os.getpid()))
    seconds = time.perf_counter() - start
    spaces = ray.get(actor.get_spaces.remote())
    weights = DefaultActorCriticModule(*spaces, cfg.get_model_config()).get_state(inference_only=True)
    ray.get(actor.set_weights.remote(weights))
    ray.get(actor.sample.remote(num_timesteps=200))  # memory after the same small sample, each
    ms = ray.get(actor.__ray_call__.remote(forward_ms))
    memory = uss_mb(pid)
    steps_per_s, episodes = timed_sample(actor, steps)
    ray.kill(actor)
    return seconds, memory, ms, steps_per_s, episodes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4000, help="env steps in the train batch")
    parser.add_argument("--num-frames", type=int, default=4)
    parser.add_argument("--no-rllib", action="store_true", help="leave RLlib's runner out")
    args = parser.parse_args()

    cfg = config(args.num_frames)
    rows = []
    with ray_session(num_cpus=2):
        for name, module_class in [
                ("NumPy CNN (default)", None),
                ("torch CNN (rl_module_class=DefaultActorCriticModule)", DefaultActorCriticModule)]:
            seconds, memory, ms, steps_per_s, sampled = runner_actor(
                cfg.copy().rl_module(rl_module_class=module_class), args.steps)
            if module_class is None:  # the train batch: from the default runner
                episodes, numpy_steps_per_s = sampled, steps_per_s
            rows.append([name, f"{seconds:.2f}", f"{memory:.0f}", f"{ms:.2f}",
                         f"{steps_per_s:,.0f}", f"{steps_per_s / numpy_steps_per_s:.2f}"])
        if not args.no_rllib:
            steps_per_s = rllib_steps_per_s(args.num_frames, args.steps)
            rows.append(["RLlib's SingleAgentEnvRunner (torch CNN)", "", "", "",
                         f"{steps_per_s:,.0f}", f"{steps_per_s / numpy_steps_per_s:.2f}"])

    single = len(pickle.dumps(episodes, protocol=5))
    stacked = len(pickle.dumps(FrameStackingLearner(args.num_frames)(episodes), protocol=5))
    frame = episodes[0].observations[0]
    print_table(f"Bytes per train batch of {args.steps} env steps ({cfg.env.__name__}: frames "
                f"{frame.shape} {frame.dtype}, {args.num_frames} stacked)",
                ["runners send", "MB", "x single frames"],
                [["single frames (learner stacks: FrameStackingLearner)", f"{single / 1e6:.1f}", "1.0"],
                 ["stacks (runner stacks)", f"{stacked / 1e6:.1f}", f"{stacked / single:.2f}"]])
    print_table(f"One runner actor with RLlib's 84x84 CNN, {NUM_ENVS} sub-envs",
                ["runner's network", "start-up s", "USS MB", f"forward ms ({NUM_ENVS} stacks)",
                 "env steps/s", "x NumPy CNN"], rows)


if __name__ == "__main__":
    main()
