"""RLlib's spellings: what RLlib's new API stack accepts works here with the same meaning, and its
old names (still in many tutorials) are refused with a ConfigError that names the replacement."""

import gymnasium as gym
import pytest

from rlcourse import IMPALAConfig, PPOConfig
from rlcourse.utils.validation import ConfigError


@pytest.mark.parametrize("call, replacement", [
    (lambda c: c.training(train_batch_size=4000), "training(train_batch_size_per_learner=...)"),
    (lambda c: c.training(sgd_minibatch_size=128), "training(minibatch_size=...)"),
    (lambda c: c.training(num_sgd_iter=10), "training(num_epochs=...)"),
    (lambda c: c.env_runners(num_rollout_workers=2), "env_runners(num_env_runners=...)"),
    (lambda c: c.env_runners(num_envs_per_worker=4), "env_runners(num_envs_per_env_runner=...)"),
    (lambda c: c.resources(num_gpus=1), "learners(num_gpus_per_learner=...)"),
    (lambda c: c.fault_tolerance(recreate_failed_env_runners=True),
     "fault_tolerance(restart_failed_env_runners=...)"),
    (lambda c: c.evaluation(evaluation_num_workers=1), "evaluation(evaluation_num_env_runners=...)"),
], ids=["train_batch_size", "sgd_minibatch_size", "num_sgd_iter", "num_rollout_workers",
        "num_envs_per_worker", "num_gpus", "recreate_failed_env_runners", "evaluation_num_workers"])
def test_an_old_name_is_refused_with_its_replacement(call, replacement):
    config = PPOConfig()
    with pytest.raises(ConfigError, match="RLlib's old name") as error:
        call(config)
    assert f"config.{replacement}" in str(error.value)
    assert vars(config) == vars(PPOConfig())  # nothing was set


def test_an_old_setter_names_the_new_one():
    with pytest.raises(AttributeError, match=r"config\.env_runners"):
        PPOConfig().rollouts(num_rollout_workers=2)
    with pytest.raises(AttributeError, match="no attribute 'no_such_setter'"):
        PPOConfig().no_such_setter()
    assert not hasattr(PPOConfig(), "rollouts")


@pytest.mark.parametrize("config, call, suggestion", [
    (PPOConfig(), lambda c: c.training(clip_parm=0.2), "clip_param"),
    (IMPALAConfig(), lambda c: c.training(vtrace_clip_rho=1.0), "vtrace_clip_rho_threshold"),
    (PPOConfig(), lambda c: c.environment("CartPole-v1", env_cfg={}), "env_config"),
], ids=["ppo_own_setting", "impala_own_setting", "shared_setting"])
def test_a_misspelt_setting_is_refused_with_the_closest_name(config, call, suggestion):
    with pytest.raises(ConfigError, match=f"did you mean '{suggestion}'") as error:
        call(config)
    assert "Its settings are [" in str(error.value)


def test_framework_torch_is_accepted_and_others_refused():
    config = PPOConfig().framework("torch")
    assert vars(config) == vars(PPOConfig())
    with pytest.raises(ConfigError, match="framework='tf2'.*PyTorch"):
        PPOConfig().framework("tf2")


@pytest.mark.parametrize("mode, expected", [
    (gym.VectorizeMode.SYNC, "SYNC"), (gym.VectorizeMode.ASYNC, "ASYNC"), ("sync", "SYNC"),
    ("async", "ASYNC"), ("SYNC", "SYNC")])
def test_gym_env_vectorize_mode_takes_gymnasiums_enum_and_rllibs_strings(mode, expected):
    config = PPOConfig().environment("CartPole-v1").env_runners(gym_env_vectorize_mode=mode)
    assert config.gym_env_vectorize_mode == expected
    config.validate()


def test_an_unknown_model_config_key_is_refused_for_the_default_model():
    config = PPOConfig().environment("CartPole-v1").rl_module(
        model_config={"fcnet_hiddens": [32], "fcnet_activaton": "relu"})
    with pytest.raises(ConfigError, match=r"no settings \['fcnet_activaton'\]"):
        config.validate()


def test_build_is_build_algo():
    config = PPOConfig().environment("CartPole-v1").training(
        train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1)
    with config.build() as algo:
        assert type(algo).__name__ == "PPO" and algo.train()["training_iteration"] == 1
