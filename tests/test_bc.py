"""BC learns CartPole from the course's PPO expert's recorded steps (tests/fixtures/
record_cartpole_expert.py made them), evaluated in the real env."""

import time
from pathlib import Path

import pytest

from rlcourse.algorithms.bc import BCConfig

EXPERT_DATA = Path(__file__).parent / "fixtures" / "cartpole_ppo_expert"


@pytest.mark.learning
def test_bc_copies_the_ppo_expert(ray_session, algo_factory):
    config = (BCConfig().environment("CartPole-v1").env_runners(num_env_runners=0)
              .offline_data(input_=str(EXPERT_DATA), dataset_num_iters_per_learner=10)
              .training(lr=3e-3, train_batch_size_per_learner=250)
              .rl_module(model_config={"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh"})
              .evaluation(evaluation_interval=1, evaluation_duration=10)
              .debugging(seed=0))
    algo = algo_factory(config)
    start, returns = time.perf_counter(), []
    while len(returns) < 30 and max(returns, default=0) < 450:  # 5,000 rows; 2,500 per iteration
        returns.append(algo.train()["evaluation"]["env_runners"]["episode_return_mean"])
    print(f"BC: evaluation returns {returns} in {time.perf_counter() - start:.1f} s")
    assert max(returns) >= 450, returns
    assert returns[0] < 450  # it learned: after its first iteration it did not balance yet
