"""AlgorithmConfig and PPOConfig: fluent setters, dict round trips, derived values, validation."""

import threading

import gymnasium as gym
import numpy as np
import pytest
from ray import tune

from rlcourse.algorithms.algorithm_config import AlgorithmConfig
from rlcourse.algorithms.evaluation_config import evaluation_config_of
from rlcourse.algorithms.impala.impala import IMPALAConfig
from rlcourse.algorithms.ppo.ppo import PPOConfig
from rlcourse.callbacks.callbacks import Callbacks
from rlcourse.connectors.env_to_module import FlattenObservations
from rlcourse.core.rl_module.default_model_config import DEFAULT_MODEL_CONFIG
from rlcourse.tune.search_space import candidates
from rlcourse.utils.validation import ConfigError


def valid_config() -> PPOConfig:
    return PPOConfig().environment("CartPole-v1")


# -- fluent setters --------------------------------------------------------------------------

class MyCallbacks(Callbacks):
    pass


SETTER_CALLS = [
    ("environment", {"env": "Pendulum-v1", "env_config": {"g": 9.81}}),
    ("env_runners", {"num_env_runners": 2, "num_envs_per_env_runner": 4, "rollout_fragment_length": 50,
                     "num_cpus_per_env_runner": 0.5, "gym_env_vectorize_mode": "ASYNC",
                     "explore": False, "sample_timeout_s": 10.0}),
    ("learners", {"num_learners": 2, "num_cpus_per_learner": 0.5}),
    ("training", {"gamma": 0.95, "lr": 1e-4, "minibatch_size": 64, "lambda_": 0.9,
                  "clip_param": 0.3, "entropy_coeff": 0.01}),
    ("rl_module", {"model_config": {"fcnet_hiddens": [32], "fcnet_activation": "relu",
                                    "vf_share_layers": False}}),
    ("evaluation", {"evaluation_interval": 5, "evaluation_duration": 3,
                    "evaluation_duration_unit": "timesteps", "evaluation_num_env_runners": 1,
                    "evaluation_parallel_to_training": True}),
    ("fault_tolerance", {"restart_failed_env_runners": False, "max_num_env_runner_restarts": 3,
                         "ignore_env_runner_failures": True, "restart_failed_sub_environments": True,
                         "env_runner_health_probe_timeout_s": 5.0}),
    ("resources", {"placement_strategy": "SPREAD"}),
    ("reporting", {"metrics_num_episodes_for_smoothing": 20}),
    ("debugging", {"seed": 7}),
    ("callbacks", {"callbacks_class": MyCallbacks}),
]


@pytest.mark.parametrize("setter, kwargs", SETTER_CALLS, ids=[s for s, _ in SETTER_CALLS])
def test_fluent_setters_set_values_and_return_self(setter, kwargs):
    config = PPOConfig()
    assert getattr(config, setter)(**kwargs) is config
    for name, value in kwargs.items():
        assert getattr(config, name) == value


def test_setters_leave_unnamed_settings_alone_and_accept_none():
    config = PPOConfig().env_runners(num_env_runners=3).debugging(seed=3)
    config.env_runners(num_envs_per_env_runner=2)
    assert config.num_env_runners == 3  # not reset by a later call that left it out
    config.debugging(seed=None)  # None is a real value, unlike leaving the argument out
    assert config.seed is None


def test_a_chain_reads_as_one_expression():
    config = (PPOConfig().environment("CartPole-v1").env_runners(num_env_runners=1)
              .training(lambda_=0.9, gamma=0.98).debugging(seed=1))
    assert isinstance(config, PPOConfig)
    assert (config.env, config.num_env_runners, config.lambda_, config.gamma, config.seed) == (
        "CartPole-v1", 1, 0.9, 0.98, 1)


def test_training_refuses_an_unknown_argument():
    with pytest.raises(ConfigError, match="did you mean 'lambda_'"):
        PPOConfig().training(lamda=0.9)


# -- to_dict / from_dict / copy --------------------------------------------------------------

def configured() -> PPOConfig:
    return (PPOConfig().environment("CartPole-v1", env_config={"render_mode": None})
            .env_runners(num_env_runners=2, num_envs_per_env_runner=3, rollout_fragment_length=40)
            .training(gamma=0.97, lambda_=0.8, use_kl_loss=True)
            .rl_module(model_config={"fcnet_hiddens": [16, 16]})
            .callbacks(MyCallbacks).debugging(seed=11))


def test_to_dict_from_dict_round_trip_keeps_settings_and_type():
    config = configured()
    d = config.to_dict()
    assert d["config_class"] == "rlcourse.algorithms.ppo.ppo:PPOConfig"
    assert d["lambda_"] == 0.8 and d["num_envs_per_env_runner"] == 3
    restored = AlgorithmConfig.from_dict(d)
    assert type(restored) is PPOConfig
    assert vars(restored) == vars(config)
    assert "config_class" in d  # from_dict does not consume the caller's dict
    restored.validate()


def test_round_trip_of_the_base_config():
    restored = AlgorithmConfig.from_dict(AlgorithmConfig().training(lr=0.01).to_dict())
    assert type(restored) is AlgorithmConfig and restored.lr == 0.01


def test_to_dict_and_copy_do_not_share_state_with_the_config():
    config = configured()
    d = config.to_dict()
    d["model_config"]["fcnet_hiddens"].append(99)
    d["env_config"]["extra"] = 1
    copied = config.copy()
    copied.model_config["fcnet_hiddens"].append(98)
    assert config.model_config["fcnet_hiddens"] == [16, 16]
    assert config.env_config == {"render_mode": None}
    restored = AlgorithmConfig.from_dict(d)
    d["model_config"]["fcnet_hiddens"].append(97)
    assert restored.model_config["fcnet_hiddens"] == [16, 16, 99]


@pytest.mark.parametrize("config_class", ["nosuch.module:PPOConfig", "PPOConfig", 3,
                                          "rlcourse.algorithms.ppo.ppo:PPO", "builtins:dict"])
def test_from_dict_names_a_bad_config_class_and_its_form(config_class):
    with pytest.raises(ConfigError, match=r"config_class=.*'module:Qualname', e\.g\. "
                                          r"'rlcourse\.algorithms\.ppo\.ppo:PPOConfig'") as info:
        AlgorithmConfig.from_dict({**PPOConfig().to_dict(), "config_class": config_class})
    assert info.value.setting == "config_class"


def test_from_dict_refuses_unknown_settings():
    d = PPOConfig().to_dict()
    d["lamda"] = 0.9
    with pytest.raises(ValueError, match="lamda"):
        AlgorithmConfig.from_dict(d)


# -- model_config ----------------------------------------------------------------------------

def test_default_model_config_is_rllibs():
    """RLlib's DefaultModelConfig shares the encoder; RLlib's PPOConfig turns that off."""
    assert DEFAULT_MODEL_CONFIG == {"fcnet_hiddens": [256, 256], "fcnet_activation": "tanh",
                                    "vf_share_layers": True}
    assert PPOConfig().model_config == {**DEFAULT_MODEL_CONFIG, "vf_share_layers": False}
    assert IMPALAConfig().model_config == DEFAULT_MODEL_CONFIG


RLLIB_MODEL = {"fcnet_hiddens": [256, 256], "fcnet_activation": "tanh", "vf_share_layers": False}


@pytest.mark.parametrize("given, expected", [
    ({"fcnet_hiddens": [32]}, {**RLLIB_MODEL, "fcnet_hiddens": [32]}),
    ({"fcnet_activation": "relu"}, {**RLLIB_MODEL, "fcnet_activation": "relu"}),
    ({"vf_share_layers": True}, {**RLLIB_MODEL, "vf_share_layers": True}),
    ({"custom_key": 1}, {**RLLIB_MODEL, "custom_key": 1}),
])
def test_rl_module_merges_model_config_with_the_defaults(given, expected):
    assert PPOConfig().rl_module(model_config=given).model_config == expected


def test_configs_do_not_share_the_default_model_config(monkeypatch):
    """Editing one config's layer list in place must not change other configs (a notebook does
    `config.model_config["fcnet_hiddens"][0] = 64` and re-runs cells in the same kernel)."""
    # A private copy of the defaults for this test, so a failure cannot leak into other tests.
    monkeypatch.setitem(DEFAULT_MODEL_CONFIG, "fcnet_hiddens", [256, 256])
    PPOConfig().model_config["fcnet_hiddens"][0] = 64
    PPOConfig().rl_module(model_config={"fcnet_activation": "relu"}).model_config[
        "fcnet_hiddens"].append(8)
    assert PPOConfig().model_config["fcnet_hiddens"] == [256, 256]
    assert DEFAULT_MODEL_CONFIG["fcnet_hiddens"] == [256, 256]


# -- get_rollout_fragment_length -------------------------------------------------------------

@pytest.mark.parametrize("batch, runners, envs, learners, fragment, expected", [
    (2000, 0, 1, 0, "auto", 2000),  # one local sub-env collects the whole batch
    (2000, 0, 4, 0, "auto", 500),   # 2000 / 4
    (2000, 3, 4, 0, "auto", 167),   # ceil(2000 / 12)
    (2000, 3, 4, 2, "auto", 334),   # ceil(2 learners * 2000 / 12)
    (1000, 2, 1, 1, "auto", 500),   # one learner: the batch is 1000
    (2000, 2, 2, 0, 50, 50),        # an explicit length is used as it is
])
def test_rollout_fragment_length(batch, runners, envs, learners, fragment, expected):
    config = (valid_config()
              .training(train_batch_size_per_learner=batch, minibatch_size=10)
              .env_runners(num_env_runners=runners, num_envs_per_env_runner=envs,
                           rollout_fragment_length=fragment)
              .learners(num_learners=learners))
    assert config.get_rollout_fragment_length() == expected
    if fragment == "auto":  # one sample() round from every sub-env covers the train batch
        sub_envs = max(1, runners) * envs
        assert expected * sub_envs >= config.total_train_batch_size > (expected - 1) * sub_envs


# -- validation ------------------------------------------------------------------------------

def test_valid_configs_pass():
    valid_config().validate()
    AlgorithmConfig().environment("CartPole-v1").validate()


@pytest.mark.parametrize("modify", [
    lambda c: c.training(gamma=0.0, lambda_=0.0),
    lambda c: c.training(gamma=1.0, lambda_=1.0, entropy_coeff=0.0, vf_loss_coeff=0.0, kl_coeff=0.0),
    lambda c: c.training(grad_clip=None, minibatch_size=2000),  # minibatch == batch is fine
    lambda c: c.env_runners(num_env_runners=np.int64(2), num_cpus_per_env_runner=0.25),
    lambda c: c.env_runners(num_cpus_per_env_runner=0, rollout_fragment_length=1),
    lambda c: c.rl_module(model_config={"fcnet_hiddens": (8,), "fcnet_activation": "linear"}),
    lambda c: c.evaluation(evaluation_interval=1, evaluation_duration_unit="timesteps"),
    lambda c: c.evaluation(evaluation_interval=1, evaluation_num_env_runners=2,
                           evaluation_parallel_to_training=True),
    lambda c: c.fault_tolerance(max_num_env_runner_restarts=0, restart_failed_env_runners=False),
    lambda c: c.debugging(seed=None),
    lambda c: c.debugging(seed=2**32 - 1),
    lambda c: c.debugging(seed=np.int64(0)).evaluation(evaluation_config={
        "seed": 5, "num_envs_per_env_runner": 2, "env_config": {"render_mode": None}}),
], ids=["zeros", "ones", "no grad clip", "numpy int, fractional cpus", "zero cpus", "tuple hiddens",
        "evaluation", "parallel evaluation", "no restarts", "no seed", "largest seed",
        "evaluation overrides"])
def test_boundary_values_are_valid(modify):
    modify(valid_config()).validate()


INVALID = [
    # (id, modification of a valid PPOConfig, the setting ConfigError names, its setter)
    ("no env", lambda c: c.environment(None), "env", "environment"),
    ("env_config not a dict", lambda c: c.environment(env_config=[("g", 9.8)]), "env_config",
     "environment"),
    ("negative num_env_runners", lambda c: c.env_runners(num_env_runners=-1), "num_env_runners",
     "env_runners"),
    ("bool as num_env_runners", lambda c: c.env_runners(num_env_runners=True), "num_env_runners",
     "env_runners"),
    ("zero num_envs_per_env_runner", lambda c: c.env_runners(num_envs_per_env_runner=0),
     "num_envs_per_env_runner", "env_runners"),
    ("float num_envs_per_env_runner", lambda c: c.env_runners(num_envs_per_env_runner=2.0),
     "num_envs_per_env_runner", "env_runners"),
    ("zero rollout_fragment_length", lambda c: c.env_runners(rollout_fragment_length=0),
     "rollout_fragment_length", "env_runners"),
    ("string rollout_fragment_length", lambda c: c.env_runners(rollout_fragment_length="full"),
     "rollout_fragment_length", "env_runners"),
    ("bool rollout_fragment_length", lambda c: c.env_runners(rollout_fragment_length=True),
     "rollout_fragment_length", "env_runners"),
    ("array as minibatch_size", lambda c: c.training(minibatch_size=np.array([64, 64])),
     "minibatch_size", "training"),
    ("array as grad_clip", lambda c: c.training(grad_clip=np.array(0.5)), "grad_clip", "training"),
    ("negative num_cpus_per_env_runner", lambda c: c.env_runners(num_cpus_per_env_runner=-0.5),
     "num_cpus_per_env_runner", "env_runners"),
    ("negative num_gpus_per_env_runner", lambda c: c.env_runners(num_gpus_per_env_runner=-1),
     "num_gpus_per_env_runner", "env_runners"),
    ("unknown vectorize mode", lambda c: c.env_runners(gym_env_vectorize_mode="THREADS"),
     "gym_env_vectorize_mode", "env_runners"),
    ("explore not a bool", lambda c: c.env_runners(explore="no"), "explore", "env_runners"),
    ("negative num_learners", lambda c: c.learners(num_learners=-1), "num_learners", "learners"),
    ("bool as num_learners", lambda c: c.learners(num_learners=False), "num_learners", "learners"),
    ("negative num_cpus_per_learner", lambda c: c.learners(num_cpus_per_learner=-1),
     "num_cpus_per_learner", "learners"),
    ("negative num_gpus_per_learner", lambda c: c.learners(num_gpus_per_learner=-0.1),
     "num_gpus_per_learner", "learners"),
    ("gamma above 1", lambda c: c.training(gamma=1.01), "gamma", "training"),
    ("gamma below 0", lambda c: c.training(gamma=-0.1), "gamma", "training"),
    ("gamma nan", lambda c: c.training(gamma=float("nan")), "gamma", "training"),
    ("bool as gamma", lambda c: c.training(gamma=True), "gamma", "training"),
    ("zero lr", lambda c: c.training(lr=0), "lr", "training"),
    ("negative lr", lambda c: c.training(lr=-1e-3), "lr", "training"),
    ("string lr", lambda c: c.training(lr="1e-3"), "lr", "training"),
    ("zero train batch", lambda c: c.training(train_batch_size_per_learner=0),
     "train_batch_size_per_learner", "training"),
    ("zero minibatch", lambda c: c.training(minibatch_size=0), "minibatch_size", "training"),
    ("minibatch larger than the batch",
     lambda c: c.training(train_batch_size_per_learner=100, minibatch_size=101), "minibatch_size",
     "training"),
    ("zero num_epochs", lambda c: c.training(num_epochs=0), "num_epochs", "training"),
    ("bool as num_epochs", lambda c: c.training(num_epochs=True), "num_epochs", "training"),
    ("zero grad_clip", lambda c: c.training(grad_clip=0.0), "grad_clip", "training"),
    ("negative grad_clip", lambda c: c.training(grad_clip=-1), "grad_clip", "training"),
    ("empty fcnet_hiddens", lambda c: c.rl_module(model_config={"fcnet_hiddens": []}), "model_config",
     "rl_module"),
    ("negative layer size", lambda c: c.rl_module(model_config={"fcnet_hiddens": [64, -1]}),
     "model_config", "rl_module"),
    ("float layer size", lambda c: c.rl_module(model_config={"fcnet_hiddens": [64.0]}), "model_config",
     "rl_module"),
    ("fcnet_hiddens not a list", lambda c: c.rl_module(model_config={"fcnet_hiddens": 64}),
     "model_config", "rl_module"),
    ("unknown activation", lambda c: c.rl_module(model_config={"fcnet_activation": "sigmoid"}),
     "model_config", "rl_module"),
    ("rl_module_class not an RLModule", lambda c: c.rl_module(rl_module_class=dict), "rl_module_class",
     "rl_module"),
    ("zero evaluation_interval", lambda c: c.evaluation(evaluation_interval=0), "evaluation_interval",
     "evaluation"),
    ("zero evaluation_duration", lambda c: c.evaluation(evaluation_duration=0), "evaluation_duration",
     "evaluation"),
    ("unknown evaluation_duration_unit", lambda c: c.evaluation(evaluation_duration_unit="steps"),
     "evaluation_duration_unit", "evaluation"),
    ("evaluation_config not a dict", lambda c: c.evaluation(evaluation_config=[("explore", False)]),
     "evaluation_config", "evaluation"),
    ("evaluation_config with an unknown setting",
     lambda c: c.evaluation(evaluation_config={"explor": False}), "evaluation_config", "evaluation"),
    ("zero smoothing window", lambda c: c.reporting(metrics_num_episodes_for_smoothing=0),
     "metrics_num_episodes_for_smoothing", "reporting"),
    ("zero sample_timeout_s", lambda c: c.env_runners(sample_timeout_s=0), "sample_timeout_s",
     "env_runners"),
    ("string sample_timeout_s", lambda c: c.env_runners(sample_timeout_s="60"), "sample_timeout_s",
     "env_runners"),
    ("negative evaluation_num_env_runners", lambda c: c.evaluation(evaluation_num_env_runners=-1),
     "evaluation_num_env_runners", "evaluation"),
    ("parallel evaluation without evaluation runners",
     lambda c: c.evaluation(evaluation_interval=1, evaluation_parallel_to_training=True),
     "evaluation_parallel_to_training", "evaluation"),
    ("parallel evaluation without an interval",
     lambda c: c.evaluation(evaluation_num_env_runners=1, evaluation_parallel_to_training=True),
     "evaluation_parallel_to_training", "evaluation"),
    ("evaluation_parallel_to_training not a bool",
     lambda c: c.evaluation(evaluation_parallel_to_training=1), "evaluation_parallel_to_training",
     "evaluation"),
    ("restart_failed_env_runners not a bool",
     lambda c: c.fault_tolerance(restart_failed_env_runners="yes"), "restart_failed_env_runners",
     "fault_tolerance"),
    ("negative max_num_env_runner_restarts",
     lambda c: c.fault_tolerance(max_num_env_runner_restarts=-1), "max_num_env_runner_restarts",
     "fault_tolerance"),
    ("ignore_env_runner_failures not a bool",
     lambda c: c.fault_tolerance(ignore_env_runner_failures=1), "ignore_env_runner_failures",
     "fault_tolerance"),
    ("restart_failed_sub_environments not a bool",
     lambda c: c.fault_tolerance(restart_failed_sub_environments=None),
     "restart_failed_sub_environments", "fault_tolerance"),
    ("zero health probe timeout", lambda c: c.fault_tolerance(env_runner_health_probe_timeout_s=0),
     "env_runner_health_probe_timeout_s", "fault_tolerance"),
    ("unknown placement_strategy", lambda c: c.resources(placement_strategy="spread"),
     "placement_strategy", "resources"),
    ("placement group of zero-CPU runners",
     lambda c: c.resources(placement_strategy="PACK").env_runners(num_cpus_per_env_runner=0),
     "placement_strategy", "resources"),
    ("custom resources not a dict",
     lambda c: c.env_runners(custom_resources_per_env_runner=["worker"]),
     "custom_resources_per_env_runner", "env_runners"),
    ("negative custom resource",
     lambda c: c.env_runners(custom_resources_per_env_runner={"worker": -1}),
     "custom_resources_per_env_runner", "env_runners"),
    ("infinite lr", lambda c: c.training(lr=float("inf")), "lr", "training"),
    ("infinite sample_timeout_s", lambda c: c.env_runners(sample_timeout_s=float("inf")),
     "sample_timeout_s", "env_runners"),
    ("infinite custom resource",
     lambda c: c.env_runners(custom_resources_per_env_runner={"worker": float("inf")}),
     "custom_resources_per_env_runner", "env_runners"),
    ("model_config None", lambda c: c.rl_module(model_config=None), "model_config", "rl_module"),
    ("model_config a list", lambda c: c.rl_module(model_config=[64, 64]), "model_config",
     "rl_module"),
    ("float seed", lambda c: c.debugging(seed=1.5), "seed", "debugging"),
    ("negative seed", lambda c: c.debugging(seed=-1), "seed", "debugging"),
    ("seed beyond 2**32 - 1", lambda c: c.debugging(seed=2**32), "seed", "debugging"),
    ("string seed", lambda c: c.debugging(seed="42"), "seed", "debugging"),
    ("callbacks not a Callbacks subclass", lambda c: c.callbacks(object), "callbacks_class",
     "callbacks"),
    ("callbacks instance instead of class", lambda c: c.callbacks(MyCallbacks()), "callbacks_class",
     "callbacks"),
    # PPO's own settings
    ("lambda_ above 1", lambda c: c.training(lambda_=1.5), "lambda_", "training"),
    ("lambda_ below 0", lambda c: c.training(lambda_=-0.01), "lambda_", "training"),
    ("zero clip_param", lambda c: c.training(clip_param=0), "clip_param", "training"),
    ("infinite clip_param", lambda c: c.training(clip_param=float("inf")), "clip_param", "training"),
    ("negative vf_clip_param", lambda c: c.training(vf_clip_param=-1.0), "vf_clip_param", "training"),
    ("negative vf_loss_coeff", lambda c: c.training(vf_loss_coeff=-0.5), "vf_loss_coeff", "training"),
    ("negative entropy_coeff", lambda c: c.training(entropy_coeff=-0.01), "entropy_coeff", "training"),
    ("use_kl_loss not a bool", lambda c: c.training(use_kl_loss="yes"), "use_kl_loss", "training"),
    ("negative kl_coeff", lambda c: c.training(kl_coeff=-0.2), "kl_coeff", "training"),
    ("zero kl_target", lambda c: c.training(kl_target=0), "kl_target", "training"),
]


@pytest.mark.parametrize("modify, setting", [row[1:3] for row in INVALID],
                         ids=[row[0] for row in INVALID])
def test_invalid_setting_raises_config_error_naming_it(modify, setting):
    config = modify(valid_config())
    with pytest.raises(ConfigError) as info:
        config.validate()
    assert info.value.setting == setting
    assert f"Invalid setting {setting}=" in str(info.value)


def test_an_env_config_value_that_cannot_be_copied_is_refused_at_validate_naming_its_key():
    """Not copy.deepcopy's "cannot pickle '_thread.lock' object" out of build_algo()."""
    config = valid_config().environment(env_config={"size": 3, "lock": threading.Lock()})
    with pytest.raises(ConfigError, match=r"config.environment\(env_config=...\): its 'lock' value "
                                          r"cannot be copied \(TypeError: cannot pickle.*create the "
                                          r"lock in the env's __init__"):
        config.validate()


def test_error_messages_name_the_setter_to_fix():
    """Each message says which fluent call takes the setting, e.g. `config.training(gamma=...)`.
    (Rows that raise nothing fail in the table test above; here they are skipped.)"""
    missing = []
    for row_id, modify, setting, setter in INVALID:
        try:
            modify(valid_config()).validate()
        except ConfigError as e:
            if f"config.{setter}({setting}=...)" not in str(e):
                missing.append(f"{row_id}: {e}")
    assert not missing, "messages that do not name the setter:\n" + "\n".join(missing)


@pytest.mark.parametrize("training, words", [
    ({"lr": tune.grid_search(0.001)}, r"lr=.*grid_search takes a list of values"),
    ({"lr": tune.grid_search([])}, r"lr=.*the search space is empty"),
    ({"lr": tune.choice([])}, r"lr=.*the search space is empty"),
    ({"train_batch_size_per_learner": tune.uniform(100, 1000)},
     r"train_batch_size_per_learner=.*can take 100.0 \(.*use tune.randint"),
    ({"num_epochs": tune.loguniform(1, 10)}, r"num_epochs=.*can take 1.0 .*whole number"),
])
def test_search_spaces_are_refused_by_shape_and_float_ranges_for_whole_numbers(training, words):
    with pytest.raises(ConfigError, match=words):
        valid_config().training(**training).to_dict()


def test_sample_from_is_accepted_and_every_nested_grid_value_is_checked():
    valid_config().training(lr=tune.sample_from(lambda spec: 10 ** np.random.uniform(-4, -3)),
                            num_epochs=tune.randint(1, 10)).to_dict()
    valid_config().rl_module(model_config={"fcnet_hiddens": tune.sample_from(lambda s: [8])}).to_dict()
    with pytest.raises(ConfigError, match=r"model_config=.*can take .*'fcnet_hiddens': '64'"):
        valid_config().rl_module(
            model_config={"fcnet_hiddens": tune.grid_search([[32], "64"])}).to_dict()


@pytest.mark.parametrize("space, drawn", [
    (tune.randint(32, 128), [32, 127]),       # upper bound excluded
    (tune.qrandint(32, 128, 32), [32, 128]),  # multiples of q, upper bound included (was 127)
    (tune.qrandint(30, 130, 32), [32, 128]),  # bounds rounded in to multiples of q
    (tune.uniform(0, 1), [0.0, 1.0]),
])
def test_a_ranges_checked_bounds_are_values_tune_draws(space, drawn):
    assert candidates(space) == drawn
    assert all(min(drawn) <= space.sample() <= max(drawn) for _ in range(200))


def test_number_ranges_are_printed_finite_and_model_config_names_its_form():
    with pytest.raises(ConfigError, match=r"lr=inf .*use a finite number > 0\.0\. e\.g\. 3e-4\.$"):
        valid_config().training(lr=float("inf")).validate()
    with pytest.raises(ConfigError, match=r"seed=-1 .*whole number in \[0, 2\*\*32 - 1\]"):
        valid_config().debugging(seed=-1).validate()
    with pytest.raises(ConfigError, match=r"model_config=None .*pass a dict, e\.g\. \{'fcnet"):
        valid_config().rl_module(model_config=None).validate()


@pytest.mark.parametrize("overrides, words", [
    ({"num_envs_per_env_runner": 0}, r"\['num_envs_per_env_runner'\]: use a whole number >= 1"),
    ({"env_config": "x"}, r"\['env_config'\]: pass a dict"),
    ({"seed": "3"}, r"\['seed'\]: use a whole number"),
    ({"explore": "no"}, r"\['explore'\]: use True"),
    ({"env": "MountainCar-v0"}, r"\['env'\] would be ignored: evaluation runs the training env"),
    ({"num_env_runners": 2}, r"\['num_env_runners'\] would be ignored.*evaluation_num_env_runners"),
], ids=["zero sub-envs", "env_config a string", "string seed", "string explore", "env", "runners"])
def test_evaluation_overrides_are_validated_naming_the_override(overrides, words):
    config = valid_config().evaluation(evaluation_config=overrides)
    with pytest.raises(ConfigError, match=r"config\.evaluation\(evaluation_config=\.\.\.\): "
                                          r"evaluation_config" + words) as info:
        config.validate()
    assert info.value.setting == "evaluation_config"


def test_evaluation_overrides_that_clash_with_the_config_or_a_bad_config():
    """A setting the overrides break is named with them; the config's own error is its own."""
    clash = valid_config().evaluation(evaluation_config={"train_batch_size_per_learner": 64})
    with pytest.raises(ConfigError, match=r"with these overrides, minibatch_size: it is larger"):
        clash.validate()
    own = valid_config().training(clip_param=0).evaluation(
        evaluation_config={"num_envs_per_env_runner": 2})
    with pytest.raises(ConfigError, match=r"^Invalid setting clip_param=0 ") as info:
        own.validate()
    assert info.value.setting == "clip_param"


def test_evaluation_config_keys_are_added_to_the_current_ones_as_in_rllib():
    config = valid_config().evaluation(evaluation_config={"num_envs_per_env_runner": 2})
    assert config.evaluation_config == {"explore": False, "num_envs_per_env_runner": 2}  # greedy
    config.evaluation(evaluation_config={"explore": True})
    assert config.evaluation_config == {"explore": True, "num_envs_per_env_runner": 2}
    eval_config = evaluation_config_of(config)  # what evaluation runs, checked again there
    assert (eval_config.explore, eval_config.num_envs_per_env_runner, eval_config.in_evaluation,
            config.num_envs_per_env_runner) == (True, 2, True, 1)
    config.evaluation_config["explore"] = "no"  # changed after build_algo: refused when built
    with pytest.raises(ConfigError, match=r"evaluation_config\['explore'\]"):
        evaluation_config_of(config)


def test_build_algo_validates_first():
    with pytest.raises(ConfigError) as info:
        valid_config().training(gamma=2.0).build_algo()
    assert info.value.setting == "gamma"


def test_config_error_is_a_value_error():
    assert issubclass(ConfigError, ValueError)


# -- errors found when building --------------------------------------------------------------

def test_unknown_env_id_fails_validation_and_names_env():
    config = PPOConfig().environment("NoSuchEnv-v0")
    with pytest.raises(ConfigError, match=r"environment\(env=\.\.\.\).*register_env") as err:
        config.build_algo()
    assert err.value.setting == "env"


class SpacesEnv(gym.Env):
    """An env with the spaces given in env_config (it is only built to read them)."""

    def __init__(self, ctx):
        self.observation_space = ctx.get("obs", gym.spaces.Box(-1, 1, (3,)))
        self.action_space = ctx.get("act", gym.spaces.Discrete(2))

    def reset(self, *, seed=None, options=None):
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.observation_space.sample(), 0.0, True, False, {}


@pytest.mark.parametrize("spaces, named", [
    ({"obs": gym.spaces.Discrete(5)}, "observation_space Discrete"),
    ({"obs": gym.spaces.Dict({"a": gym.spaces.Box(-1, 1, (2,))})}, "observation_space Dict"),
    ({"obs": gym.spaces.Tuple([gym.spaces.Discrete(2)])}, "observation_space Tuple"),
    ({"act": gym.spaces.MultiDiscrete([2, 3])}, "action_space MultiDiscrete"),
    ({"act": gym.spaces.Box(-1, 1, (2, 2))}, "action_space Box"),
], ids=["Discrete obs", "Dict obs", "Tuple obs", "MultiDiscrete action", "2-D Box action"])
def test_unsupported_spaces_fail_when_building(spaces, named):
    config = PPOConfig().environment(SpacesEnv, env_config=spaces).env_runners(num_env_runners=0)
    with pytest.raises(ValueError, match=f"Unsupported {named}") as info:
        config.build_algo()
    if "obs" in spaces:  # the message gives the config line that fixes it, as RLlib would have it
        assert ("config.env_runners(env_to_module_connector=lambda env: FlattenObservations())"
                in str(info.value)) and "import FlattenObservations" in str(info.value)


def test_supported_custom_spaces_build(algo_factory):
    """The control for the test above: Discrete observations through FlattenObservations (as in
    RLlib) and a 1-D Box action are fine; the module is built for the one-hot vectors."""
    config = (PPOConfig()
              .environment(SpacesEnv, env_config={"obs": gym.spaces.Discrete(5),
                                                  "act": gym.spaces.Box(-1, 1, (2,))})
              .env_runners(num_env_runners=0, env_to_module_connector=FlattenObservations)
              .training(train_batch_size_per_learner=32, minibatch_size=16)
              .rl_module(model_config={"fcnet_hiddens": [8]}))
    algo = algo_factory(config)
    assert algo.observation_space == gym.spaces.Box(-np.inf, np.inf, (5,), np.float32)
    assert algo.action_space.shape == (2,)


class WrongDtypeEnv(gym.Env):
    """Declares float32 observations but returns float64 ones: a classic custom-env slip."""

    observation_space = gym.spaces.Box(-1, 1, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config=None):
        pass

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2), {}

    def step(self, action):
        return np.zeros(2), 0.0, True, False, {}


def test_an_observation_outside_the_observation_space_fails_at_build_time():
    with pytest.raises(ValueError, match=r"reset\(\) returned an observation that is not in its "
                                         r"observation_space.*dtype float64"):
        PPOConfig().environment(WrongDtypeEnv).build_algo()


class NoConfigEnv(WrongDtypeEnv):
    def __init__(self):
        pass


def test_an_env_class_without_a_config_argument_is_named_with_the_fix():
    fix = r"NoConfigEnv\(env_config\).*def __init__\(self, config=None\)"
    with pytest.raises(ConfigError, match=fix):
        PPOConfig().environment(NoConfigEnv).validate()
