"""Action heads: how a runner turns its network's outputs into actions, in NumPy.

    Categorical       logits -> a sample (explore) or the argmax (greedy), with log-probabilities
    DiagGaussian      [mean, log_std] -> mean + std * noise (explore) or the mean, with log-densities
    EpsilonGreedy     Q-values -> with probability `epsilon` a random action, else the argmax (DQN)
    SquashedGaussian  [mean, log_std] -> tanh(mean + std * noise), rescaled into [low, high] (SAC)

Each algorithm's config picks its head (`AlgorithmConfig.get_action_head`); what a head needs is
its own field, set when it is built (SAC's bounds come from the action space, Ape-X's per-runner
epsilon from the runner's index) or, for DQN's scheduled epsilon, sent beside the weights
(`EnvRunnerGroup.sync_weights(..., epsilon=...)`). The torch modules' distributions are the same
(tests compare them).
"""

from typing import Protocol

import gymnasium as gym
import numpy as np

LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0  # as sac_rl_module.py clamps them


class ActionHead(Protocol):
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
    """DQN's exploration over Q-values. `epsilon` is this head's field: DQN's runners take the
    schedule's current value with each weights sync; an Ape-X runner keeps its own from the start."""

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
    u = mean. The bounds are the action space's, fixed when the head is built."""

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
    """The head of a policy-gradient module (PPO, IMPALA): a categorical or diagonal Gaussian."""
    return Categorical() if isinstance(action_space, gym.spaces.Discrete) else DiagGaussian()


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
