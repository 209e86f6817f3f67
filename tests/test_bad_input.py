"""Bad input gets clear errors (or works): Discrete spaces with a start, old gym API envs, spaces that
differ between runners, observations of the wrong shape, and a batch too small for its learners."""

import pickle
import re
import sys

import fault_envs
import gymnasium as gym
import numpy as np
import pytest
import ray.cloudpickle
from fault_envs import BadValueEnv, CountingEnv
from helpers import small_ppo

from rlcourse.algorithms.impala.impala import IMPALAConfig
from rlcourse.connectors.env_to_module import FlattenObservations
from rlcourse.env.multi_agent_env import MultiAgentEnv
from rlcourse.env.registry import register_env
from rlcourse.env.single_agent_env_runner import SingleAgentEnvRunner
from rlcourse.utils.validation import ConfigError

pytestmark = pytest.mark.timeout(240)

ray.cloudpickle.register_pickle_by_value(fault_envs)
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

SMALL_BATCH = {"train_batch_size_per_learner": 200, "minibatch_size": 100, "num_epochs": 1}


class OffsetEnv(gym.Env):
    """Observations in Discrete(5, start=10) (FlattenObservations one-hots obs - 10), actions in
    Discrete(3, start=-1); an action outside
    the space raises, as a strict simulator would. Episodes end at 14 or after 20 steps (a greedy
    policy that never walks right must still finish its evaluation episodes)."""

    def __init__(self, config=None):
        self.observation_space = gym.spaces.Discrete(5, start=10)
        self.action_space = gym.spaces.Discrete(3, start=-1)
        self.state = self.steps = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.state, self.steps = 10, 0
        return self.state, {}

    def step(self, action):
        if not self.action_space.contains(action):
            raise ValueError(f"action {action!r} is outside {self.action_space}")
        self.state = int(np.clip(self.state + action, 10, 14))
        self.steps += 1
        return self.state, float(self.state == 14), self.state == 14, self.steps >= 20, {}


@pytest.mark.parametrize("num_env_runners", [0, 1])
def test_discrete_spaces_with_a_start_train_and_act_inside_the_space(num_env_runners, ray_session,
                                                                     algo_factory):
    config = (small_ppo().environment(OffsetEnv).training(**SMALL_BATCH)
              .env_runners(num_env_runners=num_env_runners, num_envs_per_env_runner=2,
                           num_cpus_per_env_runner=0.5, env_to_module_connector=FlattenObservations)
              .evaluation(evaluation_duration=2))
    algo = algo_factory(config)
    result = algo.train()
    assert result["env_runners"]["num_env_steps_sampled"] >= 200
    algo.evaluate()
    actions = algo.compute_actions(np.array([10, 12, 14]), explore=True)
    assert all(algo.action_space.contains(int(a)) for a in actions)


class OldResetEnv(gym.Env):
    """Old gym API: reset() returns the observation only."""

    observation_space = gym.spaces.Box(-1, 1, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config=None):
        pass

    def reset(self, *, seed=None, options=None):
        return np.zeros(2, np.float32)

    def step(self, action):
        return np.zeros(2, np.float32), 0.0, False, False, {}


class OldStepEnv(OldResetEnv):
    """Old gym API: step() returns (obs, reward, done, info)."""

    def reset(self, *, seed=None, options=None):
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.zeros(2, np.float32), 0.0, False, {}


class OldSeedEnv(OldStepEnv):
    """Old gym API: reset() takes no seed."""

    def reset(self):
        return np.zeros(2, np.float32), {}


@pytest.mark.parametrize(("env", "what"), [(OldResetEnv, r"reset\(\) returned a ndarray"),
                                           (OldStepEnv, r"step\(\) returned a tuple of 4 values"),
                                           (OldSeedEnv, r"reset\(seed=0\) failed")])
def test_old_gym_api_envs_fail_at_build_time_naming_the_env_and_the_api(env, what):
    config = small_ppo().environment(env)
    with pytest.raises(TypeError, match=what) as err:
        config.build_algo()
    message = str(err.value)
    assert f"Env '{env.__name__}' follows the old gym API" in message
    assert "(obs, reward, terminated, truncated, info)" in message


class StepValuesEnv(OldStepEnv):
    """gymnasium's API, with `step_values` (reward, terminated, truncated, info) set per test."""

    step_values = (0.0, False, False, {})

    def step(self, action):
        return (np.zeros(2, np.float32), *self.step_values)


class NoOptionsEnv(OldStepEnv):
    def reset(self, *, seed=None):
        return np.zeros(2, np.float32), {}


class ResetInfoNoneEnv(OldStepEnv):
    def reset(self, *, seed=None, options=None):
        return np.zeros(2, np.float32), None


class NoSpacesEnv(StepValuesEnv):
    observation_space = (2,)


class AMultiAgentEnv(MultiAgentEnv):
    def __init__(self, config=None):
        super().__init__()


@pytest.mark.parametrize(("env", "match"), [
    (type("E", (StepValuesEnv,), {"step_values": (np.array([1.0]), False, False, {})}),
     r"Env 'E': step\(\) returned reward array\(\[1\.\]\) \(a ndarray\): return one number, e\.g\. "
     r"float\(reward\)"),
    (type("E", (StepValuesEnv,), {"step_values": ("1", False, False, {})}),
     r"Env 'E': step\(\) returned reward '1' \(a str\): return one number"),
    (type("E", (StepValuesEnv,), {"step_values": (1.0, None, False, {})}),
     r"Env 'E': step\(\) returned terminated None \(a NoneType\): return True or False"),
    (type("E", (StepValuesEnv,), {"step_values": (1.0, False, False, None)}),
     r"Env 'E': step\(\) returned info None \(a NoneType\): return a dict, e\.g\. \{\}"),
    (NoOptionsEnv, r"Env 'NoOptionsEnv': reset\(\) must take options: def reset\(self, \*, "
                   r"seed=None, options=None\)"),
    (ResetInfoNoneEnv, r"Env 'ResetInfoNoneEnv': reset\(\) returned info None, not a dict: return "
                       r"\(obs, info\)"),
    (NoSpacesEnv, r"Env 'NoSpacesEnv' has observation_space \(2,\), not a gymnasium space: set "
                  r"self\.observation_space = gym\.spaces\.Box\(\.\.\.\)"),
    (AMultiAgentEnv, r"Env 'AMultiAgentEnv' is a MultiAgentEnv: configure its agents' modules with "
                     r"config\.multi_agent\(policies=\.\.\., policy_mapping_fn=\.\.\.\)")])
def test_envs_that_would_fail_or_misread_in_the_runners_fail_at_build_naming_env_and_fix(env, match):
    """Not numpy's or gymnasium's errors at the first train(), nor terminated=None read as False."""
    with pytest.raises(TypeError, match=match) as err:
        small_ppo().environment(env).build_algo()
    assert "old gym API" not in str(err.value)


class TypoInResetEnv(OldStepEnv):
    def reset(self, *, seed=None, options=None):
        return np.zeros(2, dtyp=np.float32), {}


def test_a_type_error_inside_reset_is_not_blamed_on_the_old_gym_api_and_names_the_env():
    with pytest.raises(TypeError, match="unexpected keyword argument 'dtyp'") as err:
        small_ppo().environment(TypoInResetEnv).build_algo()
    assert "old gym API" not in str(err.value)
    assert "of env 'TypoInResetEnv'" in err.value.__notes__[0]


def test_observation_shapes_that_differ_between_runners_are_a_clear_error(ray_session):
    def creator(ctx):  # worker_index 0 (the driver) and 1 get 2 numbers, runner 2 gets 3
        size = 3 if ctx.worker_index == 2 else 2
        env = CountingEnv(ctx)
        env.observation_space = gym.spaces.Box(-np.inf, np.inf, (size,), np.float32)
        return env

    register_env("shape_per_worker", creator)
    config = (small_ppo().environment("shape_per_worker")
              .env_runners(num_env_runners=2, num_cpus_per_env_runner=0.5))
    with pytest.raises(ValueError, match=r"'shape_per_worker' on EnvRunner 2 has observation_space "
                                         r"Box\(.*\(3,\).*values, not shapes"):
        config.build_algo()


@pytest.mark.parametrize("mode", ["SYNC", "ASYNC"])
def test_an_observation_of_the_wrong_shape_names_the_env_the_space_and_the_shape(mode):
    """Not numpy's "Output array is the wrong shape" (SYNC) or "could not broadcast" (ASYNC)."""
    config = (small_ppo().environment(BadValueEnv, env_config={"bad": "long_obs", "bad_sub_env": 1})
              .env_runners(num_envs_per_env_runner=2, gym_env_vectorize_mode=mode))
    runner = SingleAgentEnvRunner(config)
    shape = ("sub-env 1 returned shape" if mode == "SYNC"
             else "numpy says: could not broadcast input array from shape")
    with pytest.raises(ValueError, match=rf"'BadValueEnv' .* observation_space Box\(.*\(2,\), "
                                         rf"float32\) \({shape} \(3,\)"):
        runner.sample(num_timesteps=20)
    runner.stop()


@pytest.mark.parametrize(("env", "runners", "envs", "batch", "refused"), [
    (CountingEnv, 0, 1, 8, True),       # never-ending episodes: one chunk (train() failed before)
    ("CartPole-v1", 1, 1, 64, True),    # 128 steps, episodes of up to 500: maybe one chunk
    ("CartPole-v1", 0, 1, 400, False),  # 800 steps span at least two episodes of up to 500
    (CountingEnv, 0, 2, 8, False),      # a chunk per sub-env, one per learner
])
def test_more_learners_than_episode_chunks_is_refused_at_build(env, runners, envs, batch, refused):
    config = (small_ppo().environment(env, env_config={"never_ends": True} if env != "CartPole-v1"
                                      else {})
              .env_runners(num_env_runners=runners, num_envs_per_env_runner=envs)
              .training(train_batch_size_per_learner=batch, minibatch_size=4, num_epochs=1)
              .learners(num_learners=2, num_cpus_per_learner=0.5))
    validates_unless_refused(config, refused, "num_envs_per_env_runner=2")


@pytest.mark.parametrize(("fragment", "refused"), [
    ("auto", True),   # one request of 200 steps fills the batch: one chunk (was refused rightly)
    (201, True),      # the same
    (150, False),     # two requests of 150 steps fill it: two chunks (was refused)
    (50, False),      # four chunks (was refused)
])
def test_impala_counts_a_chunk_per_sample_request(fragment, refused):
    """IMPALA fills a batch from requests of rollout_fragment_length steps per sub-env, each a
    chunk, so one never-ending sub-env still feeds two learners."""
    config = (IMPALAConfig().environment(CountingEnv, env_config={"never_ends": True})
              .env_runners(num_env_runners=1, num_envs_per_env_runner=1,
                           rollout_fragment_length=fragment)
              .training(train_batch_size_per_learner=100)
              .learners(num_learners=2, num_cpus_per_learner=0.5))
    validates_unless_refused(config, refused, "rollout_fragment_length <= 100")


def validates_unless_refused(config, refused: bool, fix: str) -> None:
    """Two learners and at most one chunk per iteration: refused, naming `fix`; else validated."""
    if not refused:
        config.validate()
        return
    with pytest.raises(ConfigError, match=r"num_learners=2 in config.learners.*whole episode chunks"
                                          r".*only 1 per iteration.*" + re.escape(fix)):
        config.validate()


def test_a_batch_too_small_for_its_learners_names_the_settings(ray_session, algo_factory):
    """Three sub-envs whose episodes never end give three chunks of 6 steps: 12 and 6 for the two
    learners, and each needs 8 (one chunk per learner passes build; test_config.py checks that)."""
    config = (small_ppo().environment(CountingEnv, env_config={"never_ends": True})
              .env_runners(num_envs_per_env_runner=3)
              .training(train_batch_size_per_learner=8, minibatch_size=1, num_epochs=1)
              .learners(num_learners=2, num_cpus_per_learner=0.5))
    algo = algo_factory(config)
    weights = algo.learner_group.get_weights()
    with pytest.raises(ConfigError, match=r"train_batch_size_per_learner=8 in config.training.*"
                                          r"\[12, 6\] steps.*at least 8.*minibatch_size=1"):
        algo.train()
    for name, value in algo.learner_group.get_weights().items():
        np.testing.assert_array_equal(value, weights[name])


def test_a_config_error_crosses_processes_with_its_message_and_setting():
    """A runner actor's ConfigError reaches the driver as one (Ray pickles errors)."""
    error = ConfigError("output", 5, "pass a folder", "offline_data")
    for module in (pickle, ray.cloudpickle):
        copy = module.loads(module.dumps(error))
        assert type(copy) is ConfigError and (copy.setting, copy.fix) == ("output", "pass a folder")
        assert str(copy) == str(error) == (
            "Invalid setting output=5 in config.offline_data(output=...): pass a folder")
