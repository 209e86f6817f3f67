"""PPO's learner results use RLlib's keys: the KL terms only as the KL loss is configured, and the
value function's explained variance."""

import pytest
import torch

from rlcourse.algorithms.ppo.ppo import PPOConfig
from rlcourse.algorithms.ppo.ppo_learner import explained_variance

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize("use_kl_loss", [False, True])
def test_kl_results_follow_the_setting_and_explained_variance_is_reported(use_kl_loss):
    config = (PPOConfig().environment("CartPole-v1").debugging(seed=0)
              .env_runners(num_env_runners=0)
              .training(train_batch_size_per_learner=400, minibatch_size=200, num_epochs=2,
                        use_kl_loss=use_kl_loss)
              .rl_module(model_config={"fcnet_hiddens": [16]}))
    algo = config.build_algo()
    try:
        results = algo.train()["learners"]["default_policy"]
    finally:
        algo.stop()
    assert ("curr_kl_coeff" in results) == use_kl_loss
    assert (results["mean_kl_loss"] == 0.0) == (not use_kl_loss), results["mean_kl_loss"]
    assert -1.0 <= results["vf_explained_var"] < 1.0
    assert results["vf_loss_unclipped"] >= results["vf_loss"] > 0


def test_explained_variance():
    targets = torch.tensor([1.0, 2.0, 3.0, 4.0])
    assert explained_variance(targets, targets).item() == pytest.approx(1.0)
    assert explained_variance(targets, torch.full((4,), 2.5)).item() == pytest.approx(0.0, abs=1e-6)
    assert explained_variance(targets, -10 * targets).item() == -1.0  # clipped below at -1
