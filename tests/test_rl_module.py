"""The runner's NumPy policy computes exactly the torch module's action distribution."""

import gymnasium as gym
import numpy as np
import pytest
import torch
from helpers import small_ppo

from rlcourse.core.rl_module.rl_module import RLModule, build_module
from rlcourse.env.env_runner import build_inference_module

SPACES = {
    "box_obs_discrete_actions": (gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(3)),
    "image_obs_box_actions": (gym.spaces.Box(0, 1, (2, 3)), gym.spaces.Box(-2, 2, (2,))),
}


def _modules(obs_space, act_space, activation="tanh", vf_share_layers=True):
    config = small_ppo().rl_module(model_config={"fcnet_hiddens": [32, 16],
                                                 "fcnet_activation": activation,
                                                 "vf_share_layers": vf_share_layers})
    torch.manual_seed(0)
    module = build_module(config, obs_space, act_space)
    for p in module.parameters():  # make outputs far from uniform so differences would show
        torch.nn.init.normal_(p, std=0.5)
    runner_module = build_inference_module(config, obs_space, act_space, seed=0)
    runner_module.set_state(module.get_state(inference_only=True))
    return module, runner_module


@pytest.mark.parametrize("name", sorted(SPACES))
@pytest.mark.parametrize("activation", ["tanh", "relu"])
@pytest.mark.parametrize("vf_share_layers", [True, False])
def test_numpy_inference_matches_torch(name, activation, vf_share_layers):
    obs_space, act_space = SPACES[name]
    module, runner_module = _modules(obs_space, act_space, activation, vf_share_layers)
    obs_space.seed(1)
    obs = np.stack([obs_space.sample() for _ in range(64)])
    with torch.no_grad():
        inputs = module.forward_inference({"obs": torch.as_tensor(obs)})["action_dist_inputs"]
    np.testing.assert_allclose(runner_module.action_dist_inputs(obs), inputs.numpy(),
                               rtol=1e-5, atol=1e-5)
    # The log-probability the runner records for its sampled actions is the torch module's.
    out = runner_module.forward_exploration(obs)
    torch_logp = module.get_action_dist(inputs).log_prob(torch.as_tensor(out["actions"]))
    np.testing.assert_allclose(out["action_logp"], torch_logp.numpy(), rtol=1e-4, atol=1e-4)
    greedy = runner_module.forward_inference(obs)["actions"]
    np.testing.assert_allclose(greedy, module.greedy_actions(inputs).numpy(), atol=1e-5)


def test_sampled_action_frequencies_follow_the_torch_distribution():
    obs_space, act_space = SPACES["box_obs_discrete_actions"]
    module, runner_module = _modules(obs_space, act_space)
    obs = np.repeat(obs_space.sample()[None], 20_000, axis=0)
    counts = np.bincount(runner_module.forward_exploration(obs)["actions"], minlength=3)
    with torch.no_grad():
        inputs = module.forward_inference({"obs": torch.as_tensor(obs[:1])})["action_dist_inputs"]
    probs = torch.softmax(inputs, -1).numpy()[0]
    np.testing.assert_allclose(counts / counts.sum(), probs, atol=0.02)


@pytest.mark.parametrize("vf_share_layers", [True, False])
def test_inference_state_holds_only_the_policy(vf_share_layers):
    module, _ = _modules(*SPACES["box_obs_discrete_actions"], vf_share_layers=vf_share_layers)
    state = module.get_state(inference_only=True)
    assert state and all(k.startswith(("encoder.", "pi.")) for k in state)
    assert any(k.startswith("encoder.") for k in state) == vf_share_layers
    assert any(k.startswith("vf.") for k in module.get_state())
    # A module given only the policy's weights (a runner's) acts as the full one.
    other, _ = _modules(*SPACES["box_obs_discrete_actions"], vf_share_layers=vf_share_layers)
    other.set_state(state)
    obs = torch.zeros(3, 4)
    torch.testing.assert_close(other.forward_inference({"obs": obs})["action_dist_inputs"],
                               module.forward_inference({"obs": obs})["action_dist_inputs"])
    with pytest.raises(RuntimeError, match="do not fit"):
        other.set_state({**state, "pi.9.weight": np.zeros((2, 2), np.float32)})


@pytest.mark.parametrize("algo, acting, training_only", [
    ("DQN", ("q.",), "target_q."), ("SAC", ("pi.",), "qf."),
    ("LSTM", ("encoder.", "lstm.", "pi."), "vf.")])
def test_every_default_module_sends_runners_only_its_acting_weights_and_checks_them(
        algo, acting, training_only):
    from rlcourse.algorithms.dqn.dqn import DQNConfig
    from rlcourse.algorithms.sac.sac import SACConfig

    config = {"DQN": DQNConfig(), "SAC": SACConfig(),
              "LSTM": small_ppo().rl_module(model_config={"use_lstm": True})}[algo]
    act_space = gym.spaces.Box(-1, 1, (1,)) if algo == "SAC" else gym.spaces.Discrete(2)
    module, other = (build_module(config, gym.spaces.Box(-1, 1, (4,)), act_space) for _ in "ab")
    state = module.get_state(inference_only=True)
    assert state and all(k.startswith(acting) for k in state)
    assert any(k.startswith(training_only) for k in module.get_state())
    before = other.get_state()
    other.set_state(state)  # a runner's weights: those it holds now equal, the rest untouched
    for name, value in other.get_state().items():
        np.testing.assert_array_equal(value, state[name] if name in state else before[name])
    with pytest.raises(RuntimeError, match="do not fit"):
        other.set_state({**state, f"{acting[-1]}9.weight": np.zeros((2, 2), np.float32)})
    with pytest.raises(RuntimeError, match="do not fit"):  # one acting weight left out
        other.set_state(dict(list(state.items())[1:]))


@pytest.mark.parametrize("vf_share_layers", [True, False])
def test_the_value_loss_trains_the_encoder_only_when_layers_are_shared(vf_share_layers):
    """RLlib's vf_share_layers: one encoder under both heads, or two networks."""
    module, _ = _modules(*SPACES["box_obs_discrete_actions"], vf_share_layers=vf_share_layers)
    batch = {"obs": torch.randn(5, 4)}
    out = module.forward_train(batch)
    values = module.compute_values(batch, out.get("embeddings"))
    torch.testing.assert_close(values, module.compute_values(batch))  # embeddings only save work
    values.sum().backward()
    policy_grads = [p.grad for name, p in module.named_parameters() if name.startswith("pi.")]
    encoder_grads = [p.grad for name, p in module.named_parameters() if name.startswith("encoder.")]
    assert all(g is None for g in policy_grads)
    assert bool(encoder_grads) == vf_share_layers
    assert all(g is not None and g.abs().sum() > 0 for g in encoder_grads)


class TinyModule(RLModule):
    """A custom module: one linear layer each for logits and value."""

    def setup(self):
        self.logits = torch.nn.Linear(4, 2)
        self.value = torch.nn.Linear(4, 1)

    def _forward(self, batch):
        return {"action_dist_inputs": self.logits(batch["obs"].float())}

    def compute_values(self, batch, embeddings=None):
        return self.value(batch["obs"].float()).squeeze(-1)


def test_custom_module_runs_on_runner_in_torch():
    obs_space, act_space = SPACES["box_obs_discrete_actions"][0], gym.spaces.Discrete(2)
    config = small_ppo().rl_module(rl_module_class=TinyModule)
    module = build_module(config, obs_space, act_space)
    runner_module = build_inference_module(config, obs_space, act_space, seed=0)
    runner_module.set_state(module.get_state(inference_only=True))
    obs = np.random.default_rng(0).normal(size=(8, 4)).astype(np.float32)
    with torch.no_grad():
        expected = module.logits(torch.as_tensor(obs)).argmax(-1).numpy()
    np.testing.assert_array_equal(runner_module.forward_inference(obs)["actions"], expected)
    out = runner_module.forward_exploration(obs)
    assert out["actions"].shape == (8,) and np.all(out["action_logp"] <= 0)


@pytest.mark.parametrize("algo", ["PPO", "DQN", "SAC"])
def test_default_modules_and_the_runner_network_refuse_discrete_observations_naming_the_fix(algo):
    """As RLlib's: no silent one-hot inside the module; the error gives the connector line."""
    from rlcourse.algorithms.dqn.dqn import DQNConfig
    from rlcourse.algorithms.sac.sac import SACConfig

    config = {"PPO": small_ppo(), "DQN": DQNConfig(), "SAC": SACConfig()}[algo]
    act_space = gym.spaces.Box(-1, 1, (1,)) if algo == "SAC" else gym.spaces.Discrete(2)
    fix = "env_to_module_connector=lambda env: FlattenObservations()"
    with pytest.raises(ValueError, match=r"Unsupported observation_space Discrete\(5\).*" + fix):
        build_module(config, gym.spaces.Discrete(5), act_space)
    with pytest.raises(ValueError, match=fix):
        build_inference_module(config, gym.spaces.Discrete(5), act_space, seed=0)
