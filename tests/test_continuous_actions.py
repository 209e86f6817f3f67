"""Box (continuous) actions end to end: runners, compute_actions, a module loaded from a checkpoint,
the exported file and the scaling lab all give an env actions inside its bounds, while episodes keep
the module's own (unclipped) samples, whose log-probabilities the learner needs."""

import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import ray
import torch
from helpers import small_ppo

from rlcourse.core.rl_module.module_loading import export_policy, greedy_env_actions
from rlcourse.core.rl_module.numpy_mlp import to_env_actions
from rlcourse.core.rl_module.rl_module import RLModule
from rlcourse.course.scaling import measure_throughput, scaling_config

pytestmark = pytest.mark.timeout(180)

ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # runner actors get NarrowBoxEnv

LOW, HIGH = -0.1, 0.3  # narrow and off-centre: unclipped Gaussian samples fall outside often


class NarrowBoxEnv(gym.Env):
    """Refuses any action outside its Box, so an unclipped action fails the test loudly."""

    def __init__(self, config=None):
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
        self.action_space = gym.spaces.Box(LOW, HIGH, (2,), np.float32)
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.observation_space.sample(), {}

    def step(self, action):
        if not self.action_space.contains(np.asarray(action, np.float32)):
            raise ValueError(f"action {action} outside {self.action_space}")
        self.t += 1
        reward = -float(np.sum((np.asarray(action) - 0.2) ** 2))
        return self.observation_space.sample(), reward, False, self.t >= 20, {}


def test_to_env_actions_clips_boxes_and_shifts_discrete_starts():
    box = gym.spaces.Box(np.float32([-1, 0]), np.float32([1, 2]))
    np.testing.assert_array_equal(to_env_actions(np.float32([[-3, 1], [0.5, 9]]), box),
                                  [[-1, 1], [0.5, 2]])
    np.testing.assert_array_equal(to_env_actions(np.array([0, 2]), gym.spaces.Discrete(3, start=-1)),
                                  [-1, 1])
    np.testing.assert_array_equal(to_env_actions(np.array([0, 2]), gym.spaces.Discrete(3)), [0, 2])


def test_a_box_policy_acts_inside_the_bounds_everywhere(ray_session, algo_factory, tmp_path: Path):
    config = (small_ppo().environment(NarrowBoxEnv)
              .env_runners(num_env_runners=1, num_envs_per_env_runner=4,
                           num_cpus_per_env_runner=0.5)
              .training(train_batch_size_per_learner=400, minibatch_size=100, num_epochs=1)
              .evaluation(evaluation_duration=2)
              .debugging(seed=0))
    algo = algo_factory(config)
    # Training samples with std 1 around a mean near 0: most samples fall outside [-0.1, 0.3].
    result = algo.train()
    assert result["env_runners"]["num_env_steps_sampled"] >= 400
    assert algo.evaluate()["env_runners"]["num_episodes"] == 2

    # Push the greedy action (the Gaussian's mean) far above the bound in every dimension.
    module = algo.get_module()
    with torch.no_grad():
        module.pi[-1].bias[:2] = 5.0
    obs = np.random.default_rng(0).uniform(-1, 1, (8, 3)).astype(np.float32)
    raw_means = module.forward_inference({"obs": torch.as_tensor(obs)})["action_dist_inputs"][:, :2]
    assert (raw_means > HIGH).all()
    np.testing.assert_allclose(algo.compute_actions(obs), HIGH)
    assert ((algo.compute_actions(obs, explore=True) >= LOW)
            & (algo.compute_actions(obs, explore=True) <= HIGH)).all()

    path = algo.save_to_path(tmp_path / "ckpt")
    loaded = RLModule.from_checkpoint(path, allowed=[NarrowBoxEnv])
    np.testing.assert_allclose(greedy_env_actions(loaded, obs), HIGH)
    exported = torch.export.load(export_policy(loaded, tmp_path / "policy.pt2")).module()
    np.testing.assert_allclose(exported(torch.as_tensor(obs)).numpy(), HIGH)


def test_the_scaling_lab_measures_a_continuous_action_env(ray_session):
    config = scaling_config(1, num_envs_per_env_runner=2, env_kind="continuous",
                            num_cpus_per_env_runner=0.5)
    assert config.env == "Pendulum-v1"
    assert measure_throughput(config, duration_s=0.3) > 100  # Pendulum steps in microseconds
