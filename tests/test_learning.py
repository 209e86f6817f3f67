"""PPO learns CartPole-v1 with every layout: local, remote runners, data-parallel learners.

Budgets are generous (speed goals live in benchmarks/): the test asks only that the smoothed return
reaches 400 within 200k env steps.
"""

import pytest
from helpers import small_ppo

pytestmark = [pytest.mark.learning, pytest.mark.timeout(400)]

LAYOUTS = {
    "local": {"num_env_runners": 0, "num_learners": 0},
    "1 remote runner": {"num_env_runners": 1, "num_learners": 0},
    "2 remote runners": {"num_env_runners": 2, "num_learners": 0},
    "2 learners": {"num_env_runners": 2, "num_learners": 2},
}


def train_until(algo, target: float, max_env_steps: int) -> dict:
    result = {}
    while not result or result["num_env_steps_sampled_lifetime"] < max_env_steps:
        result = algo.train()
        if result["env_runners"]["episode_return_mean"] >= target:
            break
    return result


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_ppo_solves_cartpole(layout, ray_session, algo_factory):
    runners, learners = LAYOUTS[layout]["num_env_runners"], LAYOUTS[layout]["num_learners"]
    config = (small_ppo().environment("CartPole-v1").debugging(seed=1)
              .env_runners(num_env_runners=runners, num_envs_per_env_runner=4,
                           num_cpus_per_env_runner=0.5)
              .learners(num_learners=learners, num_cpus_per_learner=0.5))
    if learners:  # keep the total batch the same as with one learner
        config.training(train_batch_size_per_learner=config.train_batch_size_per_learner // learners,
                        minibatch_size=config.minibatch_size // learners)
    algo = algo_factory(config)
    result = train_until(algo, target=400, max_env_steps=200_000)
    assert result["env_runners"]["episode_return_mean"] >= 400, result["env_runners"]
    assert result["learners"]["default_policy"]["num_env_steps_trained"] > 0
    evaluation = algo.evaluate()["env_runners"]
    assert evaluation["num_episodes"] == 10
    assert evaluation["episode_return_mean"] >= 300  # greedy play of the trained policy
