"""MARWIL (rlcourse/algorithms/marwil/): beta 0 is BC's loss; returns and advantage weights as
RLlib's MARWILTorchLearner computes them. That MARWIL learns to balance on mixed-quality data (the PPO
expert's recorded steps with many more of a random policy) where BC copies the noise is lesson 13's
run and assertion."""

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlcourse.algorithms.bc import BCConfig
from rlcourse.algorithms.marwil import MARWILConfig
from rlcourse.algorithms.marwil.marwil_learner import MARWILLearner
from rlcourse.algorithms.marwil.marwil_prelearner import MARWILOfflinePreLearner
from rlcourse.utils.validation import ConfigError

EXPERT_DATA = Path(__file__).parent / "fixtures" / "cartpole_ppo_expert"
CARTPOLE = gym.make("CartPole-v1")
SPACES = (CARTPOLE.observation_space, CARTPOLE.action_space)


def learner(config: MARWILConfig) -> MARWILLearner:
    return MARWILLearner(config.rl_module(model_config={"fcnet_hiddens": [8]}).debugging(seed=0),
                         *SPACES)


def rows() -> dict[str, np.ndarray]:
    """Five recorded CartPole steps: an episode cut after two steps (the batch holds no more of
    it), then one of three steps that terminates."""
    obs = np.arange(24, dtype=np.float32).reshape(6, 4) / 24
    return {"obs": obs[[0, 1, 2, 3, 4]], "new_obs": obs[[1, 5, 3, 4, 5]],
            "actions": np.array([0, 1, 1, 0, 1]), "rewards": np.array([1.0, 2, 1, 1, 1]),
            "terminateds": np.array([False, False, False, False, True]),
            "eps_id": np.array(["a", "a", "b", "b", "b"])}


def test_beta_zero_is_bcs_loss_and_bc_is_marwil_with_beta_zero():
    bc = learner(BCConfig())
    batch = {k: torch.as_tensor(v) for k, v in MARWILOfflinePreLearner(
        BCConfig(), *SPACES)(rows(), "rows").items()}
    loss, metrics = bc.compute_loss(batch)
    logits = bc.module.forward_train(batch)["action_dist_inputs"]
    nll = torch.nn.functional.cross_entropy(logits, batch["actions"])
    assert torch.allclose(loss, nll) and set(metrics) == {"policy_loss"}
    assert isinstance(bc, BCConfig().get_default_learner_class())
    with pytest.raises(ConfigError, match="beta.*MARWILConfig for beta > 0"):
        BCConfig().environment("CartPole-v1").offline_data(input_="x").training(
            beta=0.5).validate()
    with pytest.raises(ConfigError, match="beta"):
        MARWILConfig().environment("CartPole-v1").offline_data(input_="x").training(
            beta=1.5).validate()


def test_returns_advantage_weights_and_the_moving_norm_are_rllibs():
    config = MARWILConfig().training(gamma=0.5, beta=0.7, moving_average_sqd_adv_norm_start=4.0,
                                     moving_average_sqd_adv_norm_update_rate=0.1)
    marwil = learner(config)
    batch = MARWILOfflinePreLearner(config, *SPACES)(rows(), "rows")
    # Chunks end where the episode changes, where the next row does not continue it, and last.
    assert batch["chunk_ends"].tolist() == [False, True, False, False, True]
    one_row = {name: values[:1] for name, values in rows().items()}  # train_batch_size 1: crashed
    assert MARWILOfflinePreLearner(config, *SPACES)(one_row, "rows")["chunk_ends"].tolist() == [True]
    tensors = {k: torch.as_tensor(v) for k, v in batch.items()}
    with torch.no_grad():
        v = marwil.module.compute_values({"obs": torch.as_tensor(np.r_[batch["obs"],
                                                                      batch["new_obs"]])})
    cut = 2 + 0.5 * v[6]  # the cut chunk bootstraps from V(new_obs); the terminated one does not
    expected = torch.stack([1 + 0.5 * cut, cut, torch.tensor(1 + 0.5 + 0.25),
                            torch.tensor(1.5), torch.tensor(1.0)])
    tensors["value_targets"] = marwil.value_targets(tensors)
    assert torch.allclose(tensors["value_targets"], expected)
    loss, metrics = marwil.compute_loss(tensors)
    advantages = expected - v[:5]
    norm = 4.0 + 0.1 * (advantages.pow(2).mean() - 4.0)
    weights = torch.exp(0.7 * advantages / norm.sqrt())
    out = marwil.module.forward_train(tensors)["action_dist_inputs"]
    logp = -torch.nn.functional.cross_entropy(out, tensors["actions"], reduction="none")
    assert torch.allclose(metrics["moving_avg_sqd_adv_norm"], norm)
    assert torch.allclose(metrics["policy_loss"], -(weights * logp).mean())
    assert torch.allclose(loss, -(weights * logp).mean() + 0.5 * advantages.pow(2).mean())


def test_the_squared_advantage_norm_is_checkpointed():
    marwil = learner(MARWILConfig())
    state = {**marwil.get_state(), "moving_avg_sqd_adv_norm": 7.0}
    marwil.check_state(state)
    marwil.set_state(state)
    assert marwil.get_state()["moving_avg_sqd_adv_norm"] == 7.0
    with pytest.raises(ValueError, match="moving_avg_sqd_adv_norm"):
        marwil.check_state({**state, "moving_avg_sqd_adv_norm": float("nan")})


def test_a_marwil_checkpoint_restores_the_squared_advantage_norm(ray_session, algo_factory,
                                                                  tmp_path):
    config = (MARWILConfig().environment("CartPole-v1").env_runners(num_env_runners=0)
              .offline_data(input_=str(EXPERT_DATA), dataset_num_iters_per_learner=2)
              .training(train_batch_size_per_learner=100,
                        moving_average_sqd_adv_norm_update_rate=0.5)
              .rl_module(model_config={"fcnet_hiddens": [8]}).debugging(seed=0))
    algo = algo_factory(config)
    result = algo.train()
    # Both steps of the iteration are reported, and the norm as it is now.
    assert result["learners"]["default_policy"]["num_updates"] == 2
    assert result["learners"]["default_policy"]["num_env_steps_trained"] == 200
    assert result["learners"]["__all_modules__"]["num_env_steps_trained"] == 200
    norm = result["learners"]["default_policy"]["moving_avg_sqd_adv_norm"]
    path = algo.save_to_path(tmp_path / "ckpt")
    other = algo_factory(config)
    other.restore_from_path(path)
    assert norm != pytest.approx(100.0)  # it moved from its start
    assert other.learner_group.get_state()["moving_avg_sqd_adv_norm"] == pytest.approx(norm)
