"""PPO learner updates on the CPU vs a GPU: env steps trained per second, for the default model and a
larger one.

Each row times `PPOLearner.update` (PPO's defaults for minibatch size and epochs) on the same
CartPole-v1 batch, after one warm-up update: the Learner built with `num_gpus_per_learner=0` (CPU,
the baseline) with one torch thread (as in a Ray actor given one CPU) and with torch's default (all
cores, as in a notebook's local learner), and with `num_gpus_per_learner=1` (its CUDA device).
Throughput is the batch's env steps divided by the median seconds per update; the ratio column is
over the one-thread CPU row of the same model. Without CUDA the CPU rows are measured and printed,
and the script says it needs a GPU for the rest.

    python benchmarks/gpu_learner.py [--batch 4000] [--updates 3] [--large 1024 1024]
"""

import argparse

from common import median, print_table, timed

DEFAULT_HIDDENS = [64, 64]


def make_config(hiddens: list[int], batch: int, num_gpus: float):
    from rlcourse.algorithms.ppo.ppo import PPOConfig

    return (PPOConfig().environment("CartPole-v1").debugging(seed=0)
            .env_runners(num_envs_per_env_runner=8)
            .rl_module(model_config={"fcnet_hiddens": hiddens, "fcnet_activation": "tanh"})
            .training(train_batch_size_per_learner=batch)
            .learners(num_gpus_per_learner=num_gpus))


def sample_batch(batch: int) -> tuple[list, tuple]:
    """One batch of CartPole episodes (from a fresh default policy) and the env's spaces."""
    from rlcourse.algorithms.ppo.ppo_learner import PPOLearner
    from rlcourse.env.single_agent_env_runner import SingleAgentEnvRunner

    config = make_config(DEFAULT_HIDDENS, batch, 0)
    runner = SingleAgentEnvRunner(config, config.get_env_creator())
    runner.set_weights(PPOLearner(config, *runner.get_spaces()).get_weights(inference_only=True))
    return runner.sample(num_timesteps=batch), runner.get_spaces()


def seconds_per_update(hiddens: list[int], batch: int, num_gpus: float, episodes: list,
                       spaces: tuple, updates: int) -> tuple[float, str]:
    """Median wall time of `updates` learner updates (after a warm-up one), and the device used."""
    import torch

    from rlcourse.algorithms.ppo.ppo_learner import PPOLearner

    learner = PPOLearner(make_config(hiddens, batch, num_gpus), *spaces)

    def update() -> None:
        learner.update(episodes)
        if learner.device.type == "cuda":
            torch.cuda.synchronize(learner.device)

    update()
    return median([timed(update)[1] for _ in range(updates)]), str(learner.device)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=4000)
    parser.add_argument("--updates", type=int, default=3)
    parser.add_argument("--large", type=int, nargs="+", default=[1024, 1024])
    args = parser.parse_args()

    import torch

    cuda = torch.cuda.is_available()
    default_threads = torch.get_num_threads()
    episodes, spaces = sample_batch(args.batch)
    steps = sum(map(len, episodes))
    config = make_config(DEFAULT_HIDDENS, args.batch, 0)
    rows = []
    for name, hiddens in (("default", DEFAULT_HIDDENS), ("large", args.large)):
        timings = []  # (device label, seconds per update)
        for threads in sorted({1, default_threads}):
            torch.set_num_threads(threads)
            cpu_s, _ = seconds_per_update(hiddens, args.batch, 0, episodes, spaces, args.updates)
            timings.append((f"cpu, {threads} thread{'s' if threads > 1 else ''}", cpu_s))
        torch.set_num_threads(default_threads)
        if cuda:
            gpu_s, device = seconds_per_update(hiddens, args.batch, 1, episodes, spaces,
                                               args.updates)
            timings.append((device, gpu_s))
        one_thread_s = timings[0][1]
        rows += [[f"{name} {hiddens}", device, f"{s:.3f}", f"{steps / s:,.0f}",
                  f"{one_thread_s / s:.2f}"] for device, s in timings]
    print_table(f"PPO learner updates on a batch of {steps} CartPole env steps "
                f"(minibatch {config.minibatch_size}, {config.num_epochs} epochs; "
                f"torch {torch.__version__})",
                ["model", "device", "s / update", "env steps / s", "x CPU 1 thread"], rows)
    if not cuda:
        print("No CUDA GPU here: this benchmark needs one for the GPU side (only the CPU side was "
              "measured).")


if __name__ == "__main__":
    main()
