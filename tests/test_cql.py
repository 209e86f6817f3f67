"""CQL: settings named in their errors, the conservative penalty against a hand computation, the
penalty valuing unseen actions below recorded ones, and learning Pendulum from the course's SAC's
recorded steps (tests/fixtures/record_pendulum_sac.py made them), evaluated in the real env."""

import inspect
import math
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from rlcourse.algorithms.cql import CQL, CQLConfig
from rlcourse.algorithms.cql.cql_learner import (
    CQLLearner,
    conservative_penalty,
    sampled_action_q_values,
)
from rlcourse.algorithms.registry import get_algorithm_class
from rlcourse.utils.validation import ConfigError

SAC_DATA = Path(__file__).parent / "fixtures" / "pendulum_sac"
OBS_SPACE = gym.spaces.Box(-1, 1, (1,), np.float32)
ACT_SPACE = gym.spaces.Box(-1, 1, (1,), np.float32)


@pytest.mark.parametrize("settings, setting, words", [
    ({"bc_iters": -1}, "bc_iters", ">= 0"),
    ({"num_actions": 0}, "num_actions", ">= 1"),
    ({"temperature": 0.0}, "temperature", "finite number > 0.0"),
    ({"min_q_weight": -5.0}, "min_q_weight", "turns the penalty off"),
    ({"deterministic_backup": "yes"}, "deterministic_backup", "True"),
    ({"lagrangian": True}, "lagrangian", "leave lagrangian=False"),
    ({"n_step": 3}, "n_step", "one-step transition"),
    ({"critic_lr": 0.0}, "critic_lr", "e.g. 3e-4"),  # SAC's settings, SAC's checks
])
def test_bad_settings_fail_naming_the_setting(settings, setting, words):
    config = CQLConfig().environment("Pendulum-v1").offline_data(input_=str(SAC_DATA)).training(
        **settings)
    with pytest.raises(ConfigError, match=f"config.training\\({setting}=") as error:
        config.validate()
    assert error.value.setting == setting and words in str(error.value)


def test_no_data_or_discrete_actions_fail_naming_the_fix():
    with pytest.raises(ConfigError, match=r"input_=None in config.offline_data.*recorded data"):
        CQLConfig().environment("Pendulum-v1").validate()
    with pytest.raises(ConfigError, match=r"env='CartPole-v1'.*CQL acts in a bounded.*BC") as error:
        CQLConfig().environment("CartPole-v1").offline_data(input_=str(SAC_DATA)).validate()
    assert error.value.setting == "env"
    assert get_algorithm_class("CQL") is CQL


def test_the_config_imports_neither_torch_nor_ray_data():
    """Runners unpickle the config: it must stay as light as SAC's."""
    code = ("import sys; from rlcourse.algorithms.cql import CQLConfig; CQLConfig(); "
            "print('torch' in sys.modules, 'ray.data' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["False", "False"], out.stderr


def test_cqls_settings_and_defaults_are_rllibs():
    from ray.rllib.algorithms.cql import CQLConfig as RLlibCQLConfig  # (takes seconds to import)

    ours, theirs = CQLConfig(), RLlibCQLConfig()
    own = {"bc_iters", "temperature", "num_actions", "lagrangian", "lagrangian_thresh",
           "min_q_weight", "deterministic_backup"}
    assert own <= set(inspect.signature(RLlibCQLConfig.training).parameters)
    for setting in own | {"actor_lr", "critic_lr", "alpha_lr", "twin_q", "tau"}:
        assert getattr(ours, setting) == getattr(theirs, setting), setting


@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_the_penalty_against_a_hand_computation(temperature):
    q_sampled = torch.tensor([[1.0, 2.0, 3.0], [0.0, -1.0, 4.0]])
    log_mu = torch.tensor([[0.0, math.log(2.0), -1.0], [-math.log(2.0)] * 3])
    q_data = torch.tensor([2.5, 1.5])
    expected = 0.0
    for q_row, mu_row in zip(q_sampled.tolist(), log_mu.tolist(), strict=True):
        expected += temperature * math.log(sum(math.exp((q - m) / temperature)
                                               for q, m in zip(q_row, mu_row, strict=True))) / 2
    expected -= (2.5 + 1.5) / 2
    penalty = conservative_penalty(q_sampled, log_mu, q_data, temperature)
    assert float(penalty) == pytest.approx(expected, rel=1e-6)


class ObsPlusTenTimesAction(nn.Module):
    """Q(s, a) = s + 10 a, readable by hand."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[:, :1] + 10.0 * x[:, 1:]


def _learner(**training) -> CQLLearner:
    config = CQLConfig().training(**training).rl_module(model_config={"fcnet_hiddens": [32, 32]})
    return CQLLearner(config, OBS_SPACE, ACT_SPACE)


def test_each_state_is_judged_at_uniform_current_and_next_policy_actions():
    module = _learner(twin_q=False).module
    module.qf = ObsPlusTenTimesAction()
    # The policy at s picks 0.5 (log pi = s), at s' picks -0.5 (log pi = s').
    module.sample_actions = lambda obs: (torch.where(obs >= 5, -0.5, 0.5), obs[:, 0].clone())
    obs, new_obs = torch.tensor([[1.0], [2.0]]), torch.tensor([[7.0], [8.0]])
    [q_sampled], log_mu = sampled_action_q_values(module, obs, new_obs, num_actions=2)
    assert q_sampled.shape == log_mu.shape == (2, 6)
    uniform, current, following = q_sampled[:, :2], q_sampled[:, 2:4], q_sampled[:, 4:]
    torch.testing.assert_close(current, torch.tensor([[6.0, 6.0], [7.0, 7.0]]))  # s + 10 * 0.5
    torch.testing.assert_close(following, torch.tensor([[-4.0, -4.0], [-3.0, -3.0]]))  # at s, not s'
    assert ((uniform >= obs - 10) & (uniform <= obs + 10)).all() and uniform.std() > 0
    torch.testing.assert_close(log_mu, torch.tensor([[-math.log(2)] * 2 + [1.0] * 2 + [7.0] * 2,
                                                     [-math.log(2)] * 2 + [2.0] * 2 + [8.0] * 2]))


def _train_critics(min_q_weight: float, updates: int = 100) -> float:
    """Train on recorded actions that are all 0.5 (rewards 0); return the mean over states of
    Q(s, 0.5) minus Q(s, a) at actions the data never took."""
    torch.manual_seed(0)
    learner = _learner(min_q_weight=min_q_weight, bc_iters=0, critic_lr=3e-3, gamma=0.9)
    rng = np.random.default_rng(0)
    for step in range(updates):
        obs = rng.uniform(-1, 1, (64, 1)).astype(np.float32)
        learner.update_from_batch({
            "obs": obs, "actions": np.full((64, 1), 0.5, np.float32),
            "rewards": np.zeros(64, np.float32), "new_obs": np.clip(obs + 0.1, -1, 1),
            "terminateds": np.zeros(64, bool), "n_step": np.ones(64, np.int64),
            "weights": np.ones(64, np.float32)}, step)
    module, obs = learner.module, torch.linspace(-1, 1, 21)[:, None]
    with torch.no_grad():
        q_data = module.compute_q_values(obs, torch.full((21, 1), 0.5))[0]
        unseen = [module.compute_q_values(obs, torch.full((21, 1), a))[0] for a in (-1.0, -0.5, 0.0)]
    return float(torch.stack([q_data - q for q in unseen]).mean())


def test_the_penalty_values_unseen_actions_below_recorded_ones():
    with_penalty, without = _train_critics(min_q_weight=5.0), _train_critics(min_q_weight=0.0)
    print(f"Q(recorded) - Q(unseen): {with_penalty:.2f} with the penalty, {without:.2f} without")
    assert with_penalty > 1.0 and with_penalty > without + 1.0


@pytest.mark.learning
def test_cql_learns_pendulum_from_sacs_recording(ray_session, algo_factory):
    config = (CQLConfig().environment("Pendulum-v1").env_runners(num_env_runners=0)
              .offline_data(input_=str(SAC_DATA), dataset_num_iters_per_learner=100)
              .training(bc_iters=200, train_batch_size_per_learner=256, num_actions=4,
                        actor_lr=1e-3, critic_lr=1e-3, alpha_lr=1e-3)
              .rl_module(model_config={"fcnet_hiddens": [64, 64], "fcnet_activation": "relu"})
              .evaluation(evaluation_interval=1, evaluation_duration=5)
              .debugging(seed=0))
    algo = algo_factory(config)
    untrained = algo.evaluate()["env_runners"]["episode_return_mean"]
    start, returns = time.perf_counter(), []
    while len(returns) < 20 and max(returns, default=-2000) < -700:  # 2,000 updates at most
        returns.append(algo.train()["evaluation"]["env_runners"]["episode_return_mean"])
    print(f"CQL: evaluation returns {[round(r) for r in returns]} (untrained: {untrained:.0f}) "
          f"in {time.perf_counter() - start:.1f} s")
    # RLlib's mark for CQL on Pendulum; the untrained policy (torque ~0) lets the pendulum hang.
    assert max(returns) >= -700 and untrained < -1000, (untrained, returns)
