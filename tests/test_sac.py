"""SAC: the temperature update, the squashed Gaussian's log-prob and the twin-Q n-step target against
hand computations, the runners' NumPy policy, bad settings named at build time, remote runners
with a checkpoint round trip, and two data-parallel learners. (Learning Pendulum:
tests/test_learning.py.)"""

import json
import math
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from helpers import runner_module_in_a_fresh_process
from torch import nn

from rlcourse.algorithms.algorithm import Algorithm
from rlcourse.algorithms.sac import SACConfig
from rlcourse.algorithms.sac.sac_learner import SACLearner
from rlcourse.algorithms.sac.sac_rl_module import DefaultSACModule, squashed_gaussian_logp
from rlcourse.core.rl_module.module_loading import greedy_env_actions
from rlcourse.core.rl_module.rl_module import RLModule, TorchNetwork
from rlcourse.env.env_runner import build_inference_module
from rlcourse.utils.validation import ConfigError

pytestmark = pytest.mark.timeout(120)

OBS_SPACE = gym.spaces.Box(-1, 1, (1,), np.float32)
ACT_SPACE = gym.spaces.Box(np.array([-2.0, 0.0], np.float32), np.array([2.0, 1.0], np.float32))


class Fixed(nn.Module):
    """A "network" that returns one given value per row, whatever its input."""

    def __init__(self, values: list[float]):
        super().__init__()
        self.values = torch.tensor(values)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.values[:len(x), None]


def _learner(**training) -> SACLearner:
    config = SACConfig().training(**training).rl_module(model_config={"fcnet_hiddens": [8]})
    return SACLearner(config, OBS_SPACE, ACT_SPACE)


def _batch(rows: int, **columns) -> dict[str, torch.Tensor]:
    batch = {"obs": torch.zeros(rows, 1), "actions": torch.zeros(rows, 2),
             "rewards": torch.zeros(rows), "new_obs": torch.zeros(rows, 1),
             "terminateds": torch.zeros(rows, dtype=torch.bool),
             "n_step": torch.ones(rows, dtype=torch.int64), "weights": torch.ones(rows)}
    return {**batch, **columns}


def test_a_learner_state_loads_at_this_configs_three_learning_rates():
    """As Population Based Training continues a trial from another's state with perturbed rates."""
    saved = _learner(actor_lr=1e-4, critic_lr=2e-4, alpha_lr=3e-4).get_state()
    learner = _learner(actor_lr=4e-4, critic_lr=5e-4, alpha_lr=6e-4)
    learner.set_state(saved)
    assert [(g["name"], g["lr"]) for g in learner.optimizer.param_groups] == [
        ("actor", 4e-4), ("critic", 5e-4), ("alpha", 6e-4)]


@pytest.mark.parametrize("logp, alpha_goes", [(-3.0, "down"), (3.0, "up")])
def test_the_temperature_follows_the_entropy_against_its_target(logp, alpha_goes):
    # target_entropy "auto" = -dim(A) = -2; the entropy estimate is -logp: 3 is above the target
    # (explore less: alpha goes down), -3 below it (explore more: alpha goes up).
    learner = _learner(initial_alpha=0.5, alpha_lr=0.01)
    assert learner.target_entropy == -2.0
    module = learner.module
    module.sample_actions = lambda obs: (torch.zeros(len(obs), 2), torch.full((len(obs),), logp))
    loss, metrics = learner.compute_loss(_batch(4))
    log_alpha = math.log(0.5)
    assert float(metrics["alpha_loss"]) == pytest.approx(-log_alpha * (logp - 2.0), rel=1e-6)
    learner.optimizer.zero_grad(set_to_none=False)
    loss.backward()
    # d alpha_loss / d log_alpha = -(logp + target_entropy): 5 for logp -3, -1 for logp 3.
    expected_grad = -(logp - 2.0)
    assert float(module.log_alpha.grad) == pytest.approx(expected_grad, rel=1e-6)
    learner.apply_gradients(4)
    # Adam's first step moves a weight by lr against its gradient's sign.
    step = -0.01 * math.copysign(1.0, expected_grad)
    assert float(module.log_alpha.detach()) == pytest.approx(log_alpha + step, abs=1e-6)
    alpha = float(module.log_alpha.detach().exp())
    assert (alpha < 0.5) if alpha_goes == "down" else (alpha > 0.5)


def test_each_weight_group_gets_only_its_own_losss_gradient():
    learner = _learner(initial_alpha=0.3)
    module = learner.module
    generator = torch.Generator().manual_seed(1)
    batch = _batch(16, obs=torch.randn(16, 1, generator=generator),
                   new_obs=torch.randn(16, 1, generator=generator),
                   actions=module.to_env_actions(torch.rand(16, 2, generator=generator) * 2 - 1),
                   rewards=torch.randn(16, generator=generator))
    torch.manual_seed(0)
    loss, _ = learner.compute_loss(batch)
    learner.optimizer.zero_grad(set_to_none=False)
    loss.backward()
    # The same losses by hand, with the same random draws (s' first, then s), one at a time.
    torch.manual_seed(0)
    alpha = module.log_alpha.exp()
    next_actions, next_logp = module.sample_actions(batch["new_obs"])
    target = (batch["rewards"] + 0.99 * (module.compute_target_q_values(batch["new_obs"], next_actions)
                                         - alpha * next_logp)).detach()
    q1, q2 = module.compute_q_values(batch["obs"], module.to_squashed(batch["actions"]))
    huber = torch.nn.functional.huber_loss
    qf_loss = huber(q1, target) + huber(q2, target)
    actions, logp = module.sample_actions(batch["obs"])
    q_policy = torch.min(*module.compute_q_values(batch["obs"], actions))
    policy_loss = (alpha.detach() * logp - q_policy).mean()
    alpha_loss = -(module.log_alpha * (logp.detach() - 2.0)).mean()
    groups = module.parameter_groups()
    for name, own_loss in (("critic", qf_loss), ("actor", policy_loss), ("alpha", alpha_loss)):
        expected = torch.autograd.grad(own_loss, groups[name])
        for param, grad in zip(groups[name], expected, strict=True):
            torch.testing.assert_close(param.grad, grad, rtol=1e-5, atol=1e-6, msg=name)


def test_squashed_gaussian_logp_matches_torchs_tanh_transformed_normal():
    generator = torch.Generator().manual_seed(0)
    mean = torch.randn(64, 2, generator=generator)
    log_std = torch.rand(64, 2, generator=generator) - 1.0
    u = mean + log_std.exp() * torch.randn(64, 2, generator=generator)
    normal = torch.distributions.Independent(torch.distributions.Normal(mean, log_std.exp()), 1)
    squashed = torch.distributions.TransformedDistribution(
        normal, [torch.distributions.TanhTransform()])
    expected = squashed.log_prob(torch.tanh(u))
    torch.testing.assert_close(squashed_gaussian_logp(u, mean, log_std), expected,
                               rtol=1e-4, atol=1e-4)
    # In env units the density is spread over [low, high]: minus log(half-range) per dimension.
    module = _learner().module
    env_dist = module.get_action_dist(torch.cat([mean, log_std], dim=-1))
    env_actions = module.to_env_actions(torch.tanh(u))
    torch.testing.assert_close(env_dist.log_prob(env_actions),
                               expected - math.log(2.0) - math.log(0.5), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("twin_q", [True, False])
def test_twin_q_n_step_target_against_a_hand_computation(twin_q):
    learner = _learner(twin_q=twin_q, initial_alpha=0.5, gamma=0.9)
    module = learner.module
    # Next-state log-probs are read from new_obs; the critics and their targets are fixed tables.
    module.sample_actions = lambda obs: (torch.zeros(len(obs), 2), obs[:, 0].clone())
    module.qf, module.target_qf = Fixed([10.0, 20.0, 30.0]), Fixed([3.0, 5.0, 1.0])
    if twin_q:
        module.qf_twin, module.target_qf_twin = Fixed([11.0, 21.0, 31.0]), Fixed([4.0, 2.0, 6.0])
    batch = _batch(3, rewards=torch.tensor([1.0, 2.0, 3.0]),
                   new_obs=torch.tensor([[-1.0], [0.5], [2.0]]),
                   terminateds=torch.tensor([False, False, True]), n_step=torch.tensor([2, 1, 3]))
    _, metrics = learner.compute_loss(batch)
    next_q = [3.0, 2.0, 1.0] if twin_q else [3.0, 5.0, 1.0]  # the smaller target with twin_q
    soft_next = [q - 0.5 * logp for q, logp in zip(next_q, [-1.0, 0.5, 2.0], strict=True)]
    targets = [1.0 + 0.9**2 * soft_next[0], 2.0 + 0.9 * soft_next[1], 3.0]  # row 3 terminated
    np.testing.assert_allclose(metrics["td_error"].numpy(),
                               np.array([10.0, 20.0, 30.0]) - targets, rtol=1e-6)


def test_runners_numpy_policy_matches_the_learners_module():
    config = SACConfig().rl_module(model_config={"fcnet_hiddens": [16, 8]})
    obs_space = gym.spaces.Box(-1, 1, (4,), np.float32)
    learner = SACLearner(config, obs_space, ACT_SPACE)
    weights = learner.get_weights(inference_only=True)
    assert set(weights) == {k for k in learner.get_weights() if k.startswith("pi.")}  # no bounds
    runner_module = build_inference_module(config, obs_space, ACT_SPACE, seed=3)
    runner_module.set_state(weights)
    obs = np.random.default_rng(0).uniform(-1, 1, (64, 4)).astype(np.float32)
    module = learner.module
    with torch.no_grad():
        inputs = module.forward_inference({"obs": torch.as_tensor(obs)})["action_dist_inputs"]
    np.testing.assert_allclose(runner_module.forward_inference(obs)["actions"],
                               module.greedy_actions(inputs).numpy(), rtol=1e-5, atol=1e-6)
    # Exploring: u = mean + std * noise with the runner's own noise, squashed into [low, high].
    noise = np.random.default_rng(3).standard_normal((64, 2), dtype=np.float32)
    mean, log_std = inputs.chunk(2, dim=-1)
    u = mean + log_std.exp() * torch.as_tensor(noise)
    np.testing.assert_allclose(runner_module.forward_exploration(obs)["actions"],
                               module.to_env_actions(torch.tanh(u)).numpy(), rtol=1e-5, atol=1e-5)
    many = runner_module.forward_exploration(np.repeat(obs[:1], 2000, axis=0))["actions"]
    assert (many >= ACT_SPACE.low).all() and (many <= ACT_SPACE.high).all()
    assert many.std(axis=0).min() > 0.05  # it explores


def test_sac_config_and_its_runner_import_no_torch():
    """Runners stay light with SAC too: the config validates and a runner acts without torch."""
    assert runner_module_in_a_fresh_process("rlcourse.algorithms.sac.SACConfig", "Pendulum-v1") == (
        "InferenceModule", False)


@pytest.mark.parametrize("settings, setting, words", [
    ({"tau": 0.0}, "tau", "(0.0, 1.0]"),
    ({"tau": 1.5}, "tau", "(0.0, 1.0]"),
    ({"n_step": 0}, "n_step", ">= 1"),
    ({"replay_buffer_config": {"capacity": 100}}, "replay_buffer_config",
     "smaller than a train batch"),
    ({"actor_lr": 0.0}, "actor_lr", "e.g. 3e-4"),
    ({"critic_lr": -1e-3}, "critic_lr", "e.g. 3e-4"),
    ({"alpha_lr": "fast"}, "alpha_lr", "e.g. 3e-4"),
    ({"initial_alpha": 0.0}, "initial_alpha", "entropy's weight"),
    ({"target_entropy": "max"}, "target_entropy", "\"auto\""),
    ({"lr": 1e-3}, "lr", "actor_lr, critic_lr and alpha_lr"),
    ({"initial_alpha": float("inf")}, "initial_alpha", "finite number > 0.0"),
    ({"target_entropy": float("nan")}, "target_entropy", "a finite number"),
    ({"target_entropy": float("-inf")}, "target_entropy", "a finite number"),
])
def test_bad_settings_fail_at_build_time_naming_the_setting(settings, setting, words):
    config = SACConfig().environment("Pendulum-v1").training(**settings)
    with pytest.raises(ConfigError, match=f"config.training\\({setting}=") as error:
        config.build_algo()
    assert error.value.setting == setting and words in str(error.value)


def test_a_discrete_action_space_fails_at_build_time_pointing_to_dqn():
    with pytest.raises(ConfigError, match=r"env='CartPole-v1'.*DQN") as error:
        SACConfig().environment("CartPole-v1").build_algo()
    assert error.value.setting == "env"


def _small_config(num_env_runners: int) -> SACConfig:
    return (SACConfig().environment("Pendulum-v1").debugging(seed=0)
            .env_runners(num_env_runners=num_env_runners, num_cpus_per_env_runner=0.5,
                         rollout_fragment_length=50)
            .training(train_batch_size_per_learner=32, num_steps_sampled_before_learning_starts=64,
                      training_intensity=4, n_step=3, store_buffer_in_checkpoints=True,
                      replay_buffer_config={"capacity": 2000})
            .rl_module(model_config={"fcnet_hiddens": [16]}))


def _weights(algo) -> dict[str, np.ndarray]:
    return algo.learner_group.get_weights()


def test_remote_runners_and_a_checkpoint_round_trip_continue_exactly(ray_session, algo_factory,
                                                                     tmp_path: Path):
    algo = algo_factory(_small_config(2))
    for _ in range(6):  # 300 steps per runner: Pendulum's 200-step episodes end
        result = algo.train()
    learner = result["learners"]["default_policy"]
    assert learner["num_updates"] > 0 and result["env_runners"]["num_env_steps_sampled"] == 100
    assert learner["target_entropy"] == -1.0 and learner["alpha_value"] != 1.0
    path = algo.save_to_path(tmp_path / "ckpt")
    later = [algo.train() for _ in range(3)]
    state = json.loads(next(Path(path).glob("v-*/state.json")).read_text())
    assert len(state["dqn"]["replay_buffer"]["episodes"]) > 0  # store_buffer_in_checkpoints
    restored = Algorithm.from_checkpoint(path)
    try:
        again = [restored.train() for _ in range(3)]
        for a, b in zip(later, again, strict=True):
            for key in ("episode_return_mean", "num_env_steps_sampled_lifetime"):
                assert a["env_runners"][key] == b["env_runners"][key], key
            assert a["learners"]["default_policy"] == b["learners"]["default_policy"]
        for name, value in _weights(algo).items():
            np.testing.assert_array_equal(_weights(restored)[name], value, err_msg=name)
        evaluation = restored.evaluate()  # greedy, on an evaluation runner in this process
        assert evaluation["env_runners"]["num_episodes"] == 10
    finally:
        restored.stop()
    # The module alone, as a served policy loads it: the same greedy actions as the algorithm's.
    obs = np.random.default_rng(0).uniform(-1, 1, (16, 3)).astype(np.float32)
    module = RLModule.from_checkpoint(path)
    greedy = algo.compute_actions(obs)
    assert greedy.shape == (16, 1) and np.abs(greedy).max() <= 2.0
    later_module = algo.get_module()
    with torch.no_grad():
        inputs = later_module.forward_inference({"obs": torch.as_tensor(obs)})["action_dist_inputs"]
    np.testing.assert_allclose(later_module.greedy_actions(inputs).numpy(), greedy, rtol=1e-6)
    saved = greedy_env_actions(module, obs)  # the checkpoint's weights, 3 updates older
    assert saved.shape == (16, 1) and np.abs(saved).max() <= 2.0
    explored = algo.compute_actions(np.repeat(obs[:1], 500, axis=0), explore=True)
    assert np.abs(explored).max() <= 2.0 and explored.std() > 0.05


def test_results_hold_the_temperature_before_learning_starts(algo_factory):
    algo = algo_factory(_small_config(0).training(initial_alpha=0.5))
    first = algo.train()["learners"]["default_policy"]  # 50 env steps: learning starts at 64
    assert first["num_updates"] == 0
    assert first["alpha_value"] == pytest.approx(0.5) and first["target_entropy"] == -1.0
    second = algo.train()["learners"]["default_policy"]
    assert second["num_updates"] > 0 and second["alpha_value"] != pytest.approx(0.5)


class ZeroMeanSACModule(DefaultSACModule):
    """A custom SAC module: the default one with its policy's last layer starting at zero."""

    def setup(self) -> None:
        super().setup()
        torch.nn.init.zeros_(self.pi[-1].weight)


def test_a_custom_sac_module_acts_with_its_torch_policy_on_runners(algo_factory):
    algo = algo_factory(_small_config(0).rl_module(rl_module_class=ZeroMeanSACModule))
    for _ in range(3):
        result = algo.train()
    assert result["learners"]["default_policy"]["num_updates"] > 0
    runner_module = algo.env_runner_group.local_env_runner.module
    assert isinstance(runner_module.network, TorchNetwork)
    obs = np.random.default_rng(0).uniform(-1, 1, (32, 3)).astype(np.float32)
    np.testing.assert_allclose(runner_module.forward_inference(obs)["actions"],
                               algo.compute_actions(obs), rtol=1e-5, atol=1e-6)
    explored = runner_module.forward_exploration(np.repeat(obs[:1], 500, axis=0))["actions"]
    assert np.abs(explored).max() <= 2.0 and explored.std() > 0.05


def test_a_module_without_a_squashed_gaussian_is_refused():
    from rlcourse.core.rl_module.rl_module import DefaultActorCriticModule

    config = SACConfig().environment("Pendulum-v1").rl_module(
        rl_module_class=DefaultActorCriticModule)
    with pytest.raises(ConfigError, match="subclass .*DefaultSACModule"):
        config.build_algo()


def test_two_learners_take_the_same_steps_and_return_every_rows_td_error(ray_session,
                                                                           algo_factory):
    algo = algo_factory(_small_config(0).learners(num_learners=2, num_cpus_per_learner=0.5))
    batch_rows = 2 * algo.config.train_batch_size_per_learner
    for _ in range(6):
        result = algo.train()
    assert result["learners"]["default_policy"]["num_updates"] > 0
    batch = algo.replay_buffer.sample(batch_rows, n_step=3)
    results = algo.learner_group.update_from_batch(batch, num_env_steps_sampled_lifetime=96)
    assert results["td_error"].shape == (batch_rows,) and results["num_env_steps_trained"] == batch_rows
    first, second = algo.learner_group.foreach_learner("get_weights")
    assert first["log_alpha"] != np.log(algo.config.initial_alpha)  # the temperature learned too
    for name, value in first.items():
        np.testing.assert_array_equal(second[name], value, err_msg=name)
