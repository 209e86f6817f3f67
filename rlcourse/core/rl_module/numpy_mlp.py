"""The runners' network: a NumPy MLP (after cnn_encoder.py's NumPy CNN for images) from a default
module's weights, the action heads that turn its outputs into actions, and the InferenceModule
(network + head) an EnvRunner acts with. NumPy keeps torch out of runner processes
(benchmarks/startup_memory.py); a custom torch module is the network instead (TorchNetwork)."""

from typing import Protocol

import gymnasium as gym
import numpy as np

from rlcourse.core import STATE_IN, STATE_OUT
from rlcourse.core.rl_module.cnn_encoder import NumpyCNN, conv_layers
from rlcourse.core.rl_module.default_model_config import SpaceInfo, uses_cnn

# Applied in place: each layer's output is a fresh array, so overwriting it saves an allocation.
NUMPY_ACTIVATIONS = {"tanh": lambda x: np.tanh(x, out=x), "relu": lambda x: np.maximum(x, 0.0, out=x),
               "linear": lambda x: x}
# The default modules' runner layers, one linear chain: PPO's and IMPALA's encoder then pi, SAC's
# pi, DQN's q.encoder then q.advantages (a dueling value head folded in: V + A - mean(A) is linear).
CHAIN = ("encoder", "pi", "q.encoder", "q.advantages")
LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0  # as sac_rl_module.py clamps them


def env_action_offset(action_space: gym.Space) -> int:
    """What to add to a module's action index for the env's: a Discrete space's `start`, else 0."""
    return int(action_space.start) if isinstance(action_space, gym.spaces.Discrete) else 0


def to_env_actions(actions: np.ndarray, action_space: gym.Space) -> np.ndarray:
    """A module's actions as the env takes them: clipped into a Box, plus a Discrete `start`."""
    if isinstance(action_space, gym.spaces.Box):
        return np.clip(actions, action_space.low, action_space.high)
    return actions + env_action_offset(action_space)


def linear_layers(state: dict[str, np.ndarray], prefix: str) -> list[str]:
    """The linear layers under `prefix`: `prefix` itself, or `prefix.i` of an nn.Sequential."""
    if f"{prefix}.weight" in state:
        return [prefix]
    indices = sorted(int(k[len(prefix) + 1:].split(".")[0]) for k in state
                     if k.startswith(f"{prefix}.") and k.endswith(".weight"))
    return [f"{prefix}.{i}" for i in indices]


def layer(state: dict[str, np.ndarray], name: str) -> tuple[np.ndarray, np.ndarray]:
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
    """A default module's runner network, forward only; weights come from `set_state`."""

    is_stateful = False  # NumpyLSTM's is

    def __init__(self, info: SpaceInfo, model_config: dict):
        self.info = info
        self.activation = NUMPY_ACTIVATIONS[model_config["fcnet_activation"]]
        self.layers: list[tuple[np.ndarray, np.ndarray]] = []
        layers = (conv_layers(info.obs_shape, model_config)  # images: the CNN first
                  if uses_cnn(info.obs_shape, model_config) else [])
        self.cnn = NumpyCNN(info.obs_shape, layers, model_config.get("conv_activation", "relu")
                            ) if layers else None

    def set_state(self, state: dict[str, np.ndarray]) -> None:
        self.layers = [layer(state, name) for prefix in CHAIN
                       for name in linear_layers(state, prefix)]
        if not any(k.startswith("cnn.") for k in state):  # DQN's, SAC's: no CNN, pixels flattened
            self.cnn = None
        if self.cnn is not None:
            self.cnn.set_state(state)

    def action_dist_inputs(self, obs: np.ndarray) -> np.ndarray:
        """Logits or Q-values (Discrete), means and log-stds (Box), for a batch of observations."""
        x = self.cnn(obs) if self.cnn is not None else (
            np.asarray(obs, dtype=np.float32).reshape(len(obs), -1))  # Box observations only
        *hidden, (w_out, b_out) = self.layers
        for w, b in hidden:
            x = x @ w
            x += b
            self.activation(x)
        x = x @ w_out
        x += b_out
        return x


class ActionHead(Protocol):
    """From the network's outputs to actions: sampled (`explore`) or greedy."""

    def explore(self, inputs: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]: ...

    def greedy(self, inputs: np.ndarray) -> dict[str, np.ndarray]: ...


class Categorical:
    """Sampled actions and their log-probabilities; greedy: the most likely action."""

    def explore(self, logits: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
        actions, logp = sample_categorical(logits, rng)
        return {"actions": actions, "action_logp": logp.astype(np.float32)}

    def greedy(self, logits: np.ndarray) -> dict[str, np.ndarray]:
        return {"actions": np.argmax(logits, axis=1)}


class DiagGaussian:
    """Sampled actions and their log-densities; greedy: the mean."""

    def explore(self, inputs: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
        mean, log_std = split_gaussian(inputs)
        actions = mean + np.exp(log_std) * rng.standard_normal(mean.shape)
        return {"actions": actions, "action_logp": gaussian_logp(actions, mean, log_std)
                .astype(np.float32)}

    def greedy(self, inputs: np.ndarray) -> dict[str, np.ndarray]:
        return {"actions": split_gaussian(inputs)[0]}


class EpsilonGreedy:
    """DQN's exploration over Q-values (DQN sends `epsilon` with the weights; Ape-X fixes it)."""

    def __init__(self, num_actions: int, epsilon: float = 1.0):
        self.num_actions = num_actions
        self.epsilon = epsilon  # DQN: 1.0 until the algorithm's first sync says otherwise

    def explore(self, q_values: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
        actions = np.argmax(q_values, axis=1)
        explore = rng.random(len(actions)) < self.epsilon
        random_actions = rng.integers(self.num_actions, size=len(actions))
        return {"actions": np.where(explore, random_actions, actions)}

    def greedy(self, q_values: np.ndarray) -> dict[str, np.ndarray]:
        return {"actions": np.argmax(q_values, axis=1)}


class SquashedGaussian:
    """SAC's policy: u ~ N(mean, std), action = low + (tanh(u) + 1) / 2 * (high - low); greedy:
    u = mean."""

    def __init__(self, action_space: gym.spaces.Box):
        self.low = np.asarray(action_space.low, dtype=np.float32)
        self.high = np.asarray(action_space.high, dtype=np.float32)

    def _to_env(self, u: np.ndarray) -> np.ndarray:
        return self.low + (np.tanh(u) + 1.0) * 0.5 * (self.high - self.low)

    def explore(self, inputs: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
        mean, log_std = split_gaussian(inputs)
        std = np.exp(np.clip(log_std, LOG_STD_MIN, LOG_STD_MAX))
        u = mean + std * rng.standard_normal(mean.shape, dtype=np.float32)
        return {"actions": self._to_env(u)}

    def greedy(self, inputs: np.ndarray) -> dict[str, np.ndarray]:
        return {"actions": self._to_env(split_gaussian(inputs)[0])}


def default_action_head(action_space: gym.Space) -> Categorical | DiagGaussian:
    """PPO's and IMPALA's head: a categorical or a diagonal Gaussian."""
    return Categorical() if isinstance(action_space, gym.spaces.Discrete) else DiagGaussian()


def sample_categorical(logits: np.ndarray, rng: np.random.Generator
                       ) -> tuple[np.ndarray, np.ndarray]:
    """One action per row of `logits` and its log-probability, by inverse-CDF sampling: one
    random number per row, no softmax (ufunc reductions: cheaper than `.max()` on small batches)."""
    shifted = logits - np.maximum.reduce(logits, axis=1, keepdims=True)  # exp cannot overflow
    cdf = np.add.accumulate(np.exp(shifted), axis=1)
    total = cdf[:, -1]
    u = rng.random(len(logits)) * total
    actions = np.add.reduce(cdf[:, :-1] <= u[:, None], axis=1)
    return actions, shifted[np.arange(len(logits)), actions] - np.log(total)


def split_gaussian(dist_inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The means and log-stds of a diagonal Gaussian: the two halves of each row."""
    half = dist_inputs.shape[1] // 2
    return dist_inputs[:, :half], dist_inputs[:, half:]


def gaussian_logp(actions: np.ndarray, mean: np.ndarray, log_std: np.ndarray) -> np.ndarray:
    """Log-density of a diagonal Gaussian, summed over action dimensions."""
    z = (actions - mean) / np.exp(log_std)
    return np.add.reduce(-0.5 * z**2 - log_std - 0.5 * np.log(2 * np.pi), axis=1)


class Network(Protocol):
    """What an InferenceModule runs: NumpyMLP, or a custom torch module's (`TorchNetwork`). Each
    declares `is_stateful`; a stateful one (NumpyLSTM) has `get_initial_state()` and `step(obs,
    state)` -> (action_dist_inputs, next state) instead of `action_dist_inputs`."""

    is_stateful: bool

    def set_state(self, state: dict[str, np.ndarray]) -> None: ...

    def action_dist_inputs(self, obs: np.ndarray) -> np.ndarray: ...


class InferenceModule:
    """What an EnvRunner acts with: `head` turns the `network`'s outputs into actions. A stateful
    network's state is kept per sub-env (`state`); its runner resets it at episode starts."""

    def __init__(self, network: Network, head: ActionHead, seed: int | None = None):
        self.network = network
        self.head = head
        self.rng = np.random.default_rng(seed)
        self.is_stateful = network.is_stateful
        self.state: np.ndarray | None = None  # [sub-envs, *state shape] for a stateful network

    def set_state(self, state: dict[str, np.ndarray]) -> None:
        self.network.set_state(state)

    def reset_state(self, starts: np.ndarray) -> None:
        """Sub-envs flagged in `starts` (a bool each) start from the initial state."""
        initial = self.network.get_initial_state()
        if self.state is None or len(self.state) != len(starts):
            self.state = np.repeat(initial[None], len(starts), axis=0)
        else:
            self.state[starts] = initial

    def _step(self, obs: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """The network's outputs, and a stateful one's STATE_IN and STATE_OUT of this step."""
        if not self.is_stateful:
            return self.network.action_dist_inputs(obs), {}
        if self.state is None or len(self.state) != len(obs):
            raise ValueError(f"This module is stateful (use_lstm): call reset_state() with one "
                             f"flag per observation ({len(obs)}) before acting.")
        state_in = self.state
        inputs, self.state = self.network.step(obs, state_in)
        return inputs, {STATE_IN: state_in, STATE_OUT: self.state}

    def action_dist_inputs(self, obs: np.ndarray) -> np.ndarray:
        return self._step(obs)[0]

    def forward_exploration(self, obs: np.ndarray) -> dict[str, np.ndarray]:
        inputs, states = self._step(obs)
        return {**self.head.explore(inputs, self.rng), **states}

    def forward_inference(self, obs: np.ndarray) -> dict[str, np.ndarray]:
        inputs, states = self._step(obs)
        return {**self.head.greedy(inputs), **states}
