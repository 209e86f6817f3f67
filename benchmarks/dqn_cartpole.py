"""DQN on CartPole-v1 to RLlib's pass mark: env steps and wall time to reach a return of 450, with
the learner's updates/s and the runners' env steps/s.

Each seed trains `DQNConfig().environment("CartPole-v1").debugging(seed=s)` (the defaults otherwise)
until episode_return_mean (the mean of the last 100 episodes) >= 450; how each figure is measured is
in pass_mark.py.

Goal (issue 16): 450 within 200,000 env steps (RLlib's tuned example's pass mark).

    python benchmarks/dqn_cartpole.py [--seeds 0 1 2] [--runners 0] [--max-env-steps 200000]
"""

from pass_mark import run

TARGET_RETURN = 450.0
GOAL_ENV_STEPS = 200_000


def make_config(seed: int):
    from rlcourse.algorithms.dqn import DQNConfig

    return DQNConfig().environment("CartPole-v1").debugging(seed=seed)


if __name__ == "__main__":
    run(__doc__.splitlines()[0], "DQN (defaults) on CartPole-v1", make_config, TARGET_RETURN,
        GOAL_ENV_STEPS, [0, 1, 2])
