"""SAC on Pendulum-v1 to RLlib's pass mark: env steps and wall time to reach a return of -250, with
the learner's updates/s and the runners' env steps/s.

Each seed trains `SACConfig().environment("Pendulum-v1").debugging(seed=s)` (the defaults otherwise)
until episode_return_mean >= -250 (the mean of the last 5 episodes: the window of RLlib's tuned
example and SACConfig's default); how each figure is measured is in pass_mark.py.

Goal (issue 16): -250 within 20,000 env steps (RLlib's tuned example's pass mark).

    python benchmarks/sac_pendulum.py [--seeds 0 1 2 3 4] [--runners 0] [--max-env-steps 20000]
"""

from pass_mark import run

TARGET_RETURN = -250.0
GOAL_ENV_STEPS = 20_000


def make_config(seed: int):
    from rlcourse.algorithms.sac import SACConfig

    return SACConfig().environment("Pendulum-v1").debugging(seed=seed)


if __name__ == "__main__":
    run(__doc__.splitlines()[0], "SAC (defaults) on Pendulum-v1", make_config, TARGET_RETURN,
        GOAL_ENV_STEPS, [0, 1, 2, 3, 4])
