"""The inference-only form of the default MLP, in NumPy, for EnvRunners.

A runner only needs the policy's forward pass and action sampling. Doing that in NumPy with the
learner's weights (shipped as arrays) keeps torch out of the runner process: a runner measures
~60-70 MB (PSS, lesson 04 measures it) and starts in about half a second, where an actor that
imports torch costs ~120 MB more and seconds (benchmarks/startup_memory.py); and NumPy has less
per-call overhead on small batches.
The torch module in `rl_module.py` computes exactly the same distribution (a test checks it).
"""

import numpy as np

from rlcourse.core.rl_module.default_model_config import SpaceInfo

# Applied in place: each layer's output is a fresh array, so overwriting it saves an allocation.
_ACTIVATIONS = {"tanh": lambda x: np.tanh(x, out=x), "relu": lambda x: np.maximum(x, 0.0, out=x),
               "linear": lambda x: x}


def preprocess(obs: np.ndarray, info: SpaceInfo) -> np.ndarray:
    """A batch of raw observations as a float32 [B, obs_dim] matrix."""
    if info.obs_one_hot:
        return np.eye(info.obs_dim, dtype=np.float32)[np.asarray(obs, dtype=np.int64) - info.obs_start]
    return np.asarray(obs, dtype=np.float32).reshape(len(obs), -1)


def _linear_layers(state: dict[str, np.ndarray], prefix: str) -> list[str]:
    """`prefix.i` for each linear layer of an nn.Sequential in `state`, in order."""
    indices = sorted(int(k.split(".")[1]) for k in state
                     if k.startswith(f"{prefix}.") and k.endswith(".weight"))
    return [f"{prefix}.{i}" for i in indices]


class NumpyMLPModule:
    """Policy network of the default actor-critic, forward only. Weights come from `set_state`."""

    def __init__(self, info: SpaceInfo, model_config: dict, seed: int | None = None):
        self.info = info
        self.activation = _ACTIVATIONS[model_config["fcnet_activation"]]
        self.layers: list[tuple[np.ndarray, np.ndarray]] = []
        self.rng = np.random.default_rng(seed)

    def set_state(self, state: dict[str, np.ndarray]) -> None:
        """Take the torch module's `encoder.*` and `pi.*` arrays: one chain of linear layers with the
        activation between them. Transpose once here, not on every call."""
        self.layers = [(np.ascontiguousarray(state[f"{name}.weight"].T, dtype=np.float32),
                        np.asarray(state[f"{name}.bias"], dtype=np.float32))
                       for prefix in ("encoder", "pi") for name in _linear_layers(state, prefix)]

    def action_dist_inputs(self, obs: np.ndarray) -> np.ndarray:
        """Logits (Discrete) or means and log-stds (Box) for a batch of observations."""
        x = preprocess(obs, self.info)
        *hidden, (w_out, b_out) = self.layers
        for w, b in hidden:
            x = x @ w
            x += b
            self.activation(x)
        x = x @ w_out
        x += b_out
        return x

    def forward_exploration(self, obs: np.ndarray) -> dict[str, np.ndarray]:
        """Sample actions and return them with their log-probabilities."""
        dist_inputs = self.action_dist_inputs(obs)
        if self.info.discrete_actions:
            actions, logp = sample_categorical(dist_inputs, self.rng)
        else:
            mean, log_std = split_gaussian(dist_inputs)
            actions = mean + np.exp(log_std) * self.rng.standard_normal(mean.shape)
            logp = gaussian_logp(actions, mean, log_std)
        return {"actions": actions, "action_logp": logp.astype(np.float32)}

    def forward_inference(self, obs: np.ndarray) -> dict[str, np.ndarray]:
        """Greedy actions: the most likely action, or the Gaussian's mean."""
        dist_inputs = self.action_dist_inputs(obs)
        if self.info.discrete_actions:
            return {"actions": np.argmax(dist_inputs, axis=1)}
        return {"actions": split_gaussian(dist_inputs)[0]}


def sample_categorical(logits: np.ndarray, rng: np.random.Generator
                       ) -> tuple[np.ndarray, np.ndarray]:
    """One action per row of `logits`, and its log-probability.

    Inverse-CDF sampling: draw u uniformly below the row's total (unnormalized) probability; the
    action is how many of the first K-1 cumulative probabilities are <= u. One random number per
    row and no softmax. Ufunc reductions (`np.maximum.reduce`, ...) are used because on the small
    batches of a runner they cost half of what the array methods (`.max()`, ...) do.
    """
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
