"""`rlcourse evaluate`: play a checkpoint's greedy policy for N episodes, and optionally film it.

    python -m rlcourse evaluate /tmp/ckpt --episodes 5 --render play.gif --seed 0

The policy acts as in RLlib's new stack: the RLModule's `forward_inference` gives the action
distribution's inputs, and the greedy action is their most likely one. One env in this process
plays, so what you see is the policy alone, without runners or exploration. A checkpoint trained
with env-to-module connectors (MeanStdFilter, FlattenObservations) plays through them, with the
statistics saved in the checkpoint, frozen.
"""

import argparse
from pathlib import Path

import numpy as np

from rlcourse.algorithms.algorithm import Algorithm
from rlcourse.core.rl_module.module_loading import frozen_env_to_module, greedy_env_actions
from rlcourse.course.cli import positive_int
from rlcourse.course.envs import GridWorld, LatencyBoundCartPole
from rlcourse.env.env_context import EnvContext

MAX_FRAMES = 500  # a GIF of CartPole at 600x400 stays a few MB
# Env classes a checkpoint may name besides gymnasium ids: the course's own (a tuned example's too).
COURSE_ENVS = (GridWorld, LatencyBoundCartPole)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rlcourse evaluate", description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", help="a directory written by algo.save_to_path()")
    parser.add_argument("--episodes", type=positive_int, default=5)
    parser.add_argument("--render", metavar="OUT.gif",
                        help=f"write an animated GIF of the episodes (at most {MAX_FRAMES} frames)")
    parser.add_argument("--seed", type=int, help="seed of the first episode's reset")
    return parser


def make_env(algo: Algorithm, render: bool):
    """One env as the checkpoint's runners build it; with render_mode="rgb_array" if `render`."""
    render_error = (f"--render: the env {algo.config.env!r} cannot draw 'rgb_array' images when "
                    "its env_config has render_mode='rgb_array'; leave --render out, or give the "
                    "env that render mode.")
    env_config = {**algo.config.env_config, **({"render_mode": "rgb_array"} if render else {})}
    try:
        env = algo.env_creator(EnvContext(env_config))
    except (TypeError, ValueError) as e:
        if not render:
            raise
        raise SystemExit(f"{render_error} ({e})") from None
    if render and getattr(env, "render_mode", None) != "rgb_array":
        env.close()
        raise SystemExit(render_error)
    return env


def play(algo: Algorithm, episodes: int, seed: int | None, render: bool
         ) -> tuple[list[tuple[float, int]], list[np.ndarray], int]:
    """(return, length) of each episode, the frames of the first MAX_FRAMES steps if `render`, and
    the env's frames per second."""
    env = make_env(algo, render)
    module = algo.get_module()
    # The checkpoint's connectors with its saved statistics, frozen: greedy_env_actions applies
    # them to the raw observations, as the runners did in training.
    if algo.env_to_module is not None:
        module.env_to_module = frozen_env_to_module(
            algo.config, algo.env_to_module.input_observation_space, algo.action_space,
            algo.env_runner_group.env_to_module_state)
    rows, frames = [], []
    try:
        for episode in range(episodes):
            obs, _ = env.reset(seed=None if seed is None or episode else seed)
            total, length, done = 0.0, 0, False
            while not done:
                if render and len(frames) < MAX_FRAMES:
                    frames.append(env.render())
                obs, reward, terminated, truncated, _ = env.step(
                    greedy_env_actions(module, np.asarray(obs)[None])[0])
                total, length, done = total + float(reward), length + 1, terminated or truncated
            rows.append((total, length))
    finally:
        env.close()
    return rows, frames, env.metadata.get("render_fps") or 30


def write_gif(path: str, frames: list[np.ndarray], fps: int) -> None:
    """An animated GIF that loops, one image per frame."""
    from PIL import Image

    images = [Image.fromarray(frame) for frame in frames]
    images[0].save(path, save_all=True, append_images=images[1:], duration=int(1000 / fps), loop=0)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.render and not (args.render.lower().endswith(".gif") and Path(args.render).parent.is_dir()):
        raise SystemExit(f"--render {args.render}: give a .gif file in an existing folder, "
                         "e.g. --render play.gif.")
    algo = Algorithm.from_checkpoint(args.checkpoint, allowed=COURSE_ENVS)
    try:
        rows, frames, fps = play(algo, args.episodes, args.seed, render=bool(args.render))
    finally:
        algo.stop()
    print(f"{'episode':>7} {'return':>10} {'length':>7}")
    for i, (ret, length) in enumerate(rows, start=1):
        print(f"{i:7d} {ret:10.2f} {length:7d}")
    print(f"mean return over {len(rows)} episodes: {np.mean([r for r, _ in rows]):.2f}")
    if args.render:
        write_gif(args.render, frames, fps)
        print(f"wrote {len(frames)} frames to {Path(args.render).resolve()}")
    return 0
