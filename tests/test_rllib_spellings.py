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


def test_single_agent_env_runner_is_built_from_a_config_alone_and_samples():
    from rlcourse.env.single_agent_env_runner import SingleAgentEnvRunner

    config = PPOConfig().environment("CartPole-v1").env_runners(num_envs_per_env_runner=2)
    runner = SingleAgentEnvRunner(config=config)  # RLlib's call: its own env and a fresh module
    episodes = runner.sample(num_timesteps=40)
    assert sum(len(e) for e in episodes) >= 40
    assert all(e.actions.dtype.kind == "i" and set(e.actions) <= {0, 1} for e in episodes)
    assert runner.weights_seq_no == 0  # one set of weights, made by the runner itself


def test_a_groups_runner_without_weights_still_refuses_to_sample():
    from rlcourse.env.single_agent_env_runner import SingleAgentEnvRunner

    config = PPOConfig().environment("CartPole-v1")
    with pytest.raises(RuntimeError, match="no policy weights yet"):
        SingleAgentEnvRunner(config, config.get_env_creator()).sample(num_timesteps=10)


def test_default_model_config_is_rllibs_spelling_of_the_model_config_dict():
    from rlcourse.core.rl_module.default_model_config import DefaultModelConfig

    config = PPOConfig().environment("CartPole-v1").rl_module(
        model_config=DefaultModelConfig(fcnet_hiddens=[32], fcnet_activation="relu"))
    assert config.model_config == {"fcnet_hiddens": [32], "fcnet_activation": "relu",
                                   "vf_share_layers": False}  # PPO's default, as in RLlib
    assert type(config.model_config) is dict  # saved in checkpoints as a plain dict
    config.validate()
    unsupported = PPOConfig().environment("CartPole-v1").rl_module(
        model_config=DefaultModelConfig(use_attention=True))
    with pytest.raises(ConfigError, match=r"no settings \['use_attention'\]"):
        unsupported.validate()
    not_a_bool = PPOConfig().environment("CartPole-v1").rl_module(
        model_config=DefaultModelConfig(vf_share_layers="yes"))
    with pytest.raises(ConfigError, match="vf_share_layers must be True"):
        not_a_bool.validate()


def test_rl_module_spec_sets_the_module_class_and_model_config():
    from rlcourse.core.rl_module.rl_module import DefaultActorCriticModule
    from rlcourse.core.rl_module.rl_module_spec import RLModuleSpec

    spec = RLModuleSpec(module_class=DefaultActorCriticModule, model_config={"fcnet_hiddens": [8]})
    config = PPOConfig().environment("CartPole-v1").rl_module(rl_module_spec=spec)
    assert config.rl_module_class is DefaultActorCriticModule
    assert config.model_config["fcnet_hiddens"] == [8]
    env = gym.make("CartPole-v1")
    module = RLModuleSpec(observation_space=env.observation_space, action_space=env.action_space,
                          model_config={"fcnet_hiddens": [8]}).build()
    assert isinstance(module, DefaultActorCriticModule) and module.encoder[0].out_features == 8
    with pytest.raises(ConfigError, match="spaces from its env"):
        PPOConfig().rl_module(rl_module_spec=RLModuleSpec(observation_space=env.observation_space))
    with pytest.raises(ConfigError, match="not both"):
        PPOConfig().rl_module(rl_module_spec=spec, model_config={"fcnet_hiddens": [8]})
    with pytest.raises(ConfigError, match="RLModuleSpec"):
        PPOConfig().rl_module(rl_module_spec={"module_class": DefaultActorCriticModule})
    with pytest.raises(ValueError, match="needs observation_space"):
        RLModuleSpec().build()
