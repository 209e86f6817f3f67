"""The runners' network: one NumPy MLP built from a default module's state dict, and the
InferenceModule an EnvRunner acts with (a network, then an action head: action_heads.py).

A runner only needs the policy's forward pass and action sampling. Doing that in NumPy with the
learner's weights (shipped as arrays) keeps torch out of the runner process: lesson 04 and
benchmarks/startup_memory.py measure what a runner costs without torch and with it; and NumPy has
less per-call overhead on small batches. The torch modules compute exactly the same outputs (tests
compare them: tests/test_rl_module.py, test_dqn.py, test_sac.py).

The default modules' runner layers are one chain of linear layers with the activation between them:

    PPO, IMPALA (DefaultActorCriticModule)   encoder.* then pi.*  -> logits, or means and log-stds
    SAC (DefaultSACModule)                   pi.*                 -> means and log-stds
    DQN (DefaultDQNModule)                   q.encoder.* then q.advantages (+ q.value) -> Q-values

A dueling Q-network's V(s) + A(s, a) - mean_a' A(s, a') is linear in the last features, so its two
heads fold into one linear layer here. Other keys of the state (value heads, critics, targets) are
ignored, so a full checkpoint's state works as well as the learner's inference-only weights.
"""

from typing import Protocol

import numpy as np

from rlcourse.core.rl_module.action_heads import ActionHead
from rlcourse.core.rl_module.default_model_config import SpaceInfo

# Applied in place: each layer's output is a fresh array, so overwriting it saves an allocation.
_ACTIVATIONS = {"tanh": lambda x: np.tanh(x, out=x), "relu": lambda x: np.maximum(x, 0.0, out=x),
               "linear": lambda x: x}
CHAIN = ("encoder", "pi", "q.encoder", "q.advantages")  # the default modules' runner layers


def preprocess(obs: np.ndarray, info: SpaceInfo) -> np.ndarray:
    """A batch of raw observations as a float32 [B, obs_dim] matrix."""
    if info.obs_one_hot:
        return np.eye(info.obs_dim, dtype=np.float32)[np.asarray(obs, dtype=np.int64) - info.obs_start]
    return np.asarray(obs, dtype=np.float32).reshape(len(obs), -1)


def _linear_layers(state: dict[str, np.ndarray], prefix: str) -> list[str]:
    """The linear layers under `prefix` in `state`: `prefix` itself, or `prefix.i` of an
    nn.Sequential, in order."""
    if f"{prefix}.weight" in state:
        return [prefix]
    indices = sorted(int(k[len(prefix) + 1:].split(".")[0]) for k in state
                     if k.startswith(f"{prefix}.") and k.endswith(".weight"))
    return [f"{prefix}.{i}" for i in indices]


def _layer(state: dict[str, np.ndarray], name: str) -> tuple[np.ndarray, np.ndarray]:
    """(weight, bias) of a torch linear layer, transposed once here for `x @ w + b`."""
    if name == "q.advantages" and "q.value.weight" in state:  # dueling: fold V into A
        w_a, b_a = (np.asarray(state[f"q.advantages.{p}"], dtype=np.float64) for p in ("weight", "bias"))
        w_v, b_v = (np.asarray(state[f"q.value.{p}"], dtype=np.float64) for p in ("weight", "bias"))
        weight, bias = w_v + w_a - w_a.mean(axis=0), b_v + b_a - b_a.mean()
    else:
        weight, bias = state[f"{name}.weight"], state[f"{name}.bias"]
    return (np.ascontiguousarray(np.asarray(weight).T, dtype=np.float32),
            np.asarray(bias, dtype=np.float32))


class NumpyMLP:
    """A default module's runner network, forward only. Weights come from `set_state`."""

    def __init__(self, info: SpaceInfo, model_config: dict):
        self.info = info
        self.activation = _ACTIVATIONS[model_config["fcnet_activation"]]
        self.layers: list[tuple[np.ndarray, np.ndarray]] = []

    def set_state(self, state: dict[str, np.ndarray]) -> None:
        """Take the torch module's arrays (see the chain above)."""
        self.layers = [_layer(state, name) for prefix in CHAIN
                       for name in _linear_layers(state, prefix)]

    def action_dist_inputs(self, obs: np.ndarray) -> np.ndarray:
        """Logits or Q-values (Discrete), means and log-stds (Box), for a batch of observations."""
        x = preprocess(obs, self.info)
        *hidden, (w_out, b_out) = self.layers
        for w, b in hidden:
            x = x @ w
            x += b
            self.activation(x)
        x = x @ w_out
        x += b_out
        return x


class Network(Protocol):
    """What an InferenceModule runs: NumpyMLP, or a custom torch module's (`TorchNetwork`)."""

    def set_state(self, state: dict[str, np.ndarray]) -> None: ...

    def action_dist_inputs(self, obs: np.ndarray) -> np.ndarray: ...


class InferenceModule:
    """What an EnvRunner acts with: `network` gives the action distribution's inputs, `head`
    (action_heads.py) turns them into actions, with this module's random generator."""

    def __init__(self, network: Network, head: ActionHead, seed: int | None = None):
        self.network = network
        self.head = head
        self.rng = np.random.default_rng(seed)

    def set_state(self, state: dict[str, np.ndarray]) -> None:
        """New weights (only weights: exploration settings are the head's own fields)."""
        self.network.set_state(state)

    def action_dist_inputs(self, obs: np.ndarray) -> np.ndarray:
        return self.network.action_dist_inputs(obs)

    def forward_exploration(self, obs: np.ndarray) -> dict[str, np.ndarray]:
        """Exploring actions (and, for a distribution, their log-probabilities)."""
        return self.head.explore(self.network.action_dist_inputs(obs), self.rng)

    def forward_inference(self, obs: np.ndarray) -> dict[str, np.ndarray]:
        """Greedy actions."""
        return self.head.greedy(self.network.action_dist_inputs(obs))
