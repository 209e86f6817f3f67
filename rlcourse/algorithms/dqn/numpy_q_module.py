"""The runners' form of DefaultDQNModule: the online Q-network in NumPy, acting epsilon-greedily.

With probability `epsilon` a runner takes a uniformly random action, else the action of the largest
Q-value. The algorithm ships `epsilon` with the weights (the key "epsilon" beside the `q.*` arrays),
so every runner explores as the schedule says now; a runner keeps its epsilon until new weights
bring another. Ape-X ships one epsilon per runner (an array) and each runner takes its own.
A custom DQN module (a DefaultDQNModule subclass) acts the same way on runners, with its torch
network (`TorchQInferenceModule`).
"""

from typing import Any

import numpy as np

from rlcourse.core.rl_module.default_model_config import SpaceInfo
from rlcourse.core.rl_module.numpy_mlp import _ACTIVATIONS, preprocess


class EpsilonGreedy:
    """Greedy and epsilon-greedy actions from a subclass's `q_values(obs)`."""

    def __init__(self, num_actions: int, seed: int | None = None):
        self.num_actions = num_actions
        self.epsilon = 1.0  # until the algorithm's first weights say otherwise
        self.worker_index = 0  # set by the EnvRunner: picks this runner's entry of per-runner epsilons
        self.rng = np.random.default_rng(seed)

    def q_values(self, obs: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _take_epsilon(self, state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Keep the shipped epsilon (if any); return the weights without it. An array holds one
        epsilon per runner (Ape-X): runner i (worker_index i + 1) takes entry i."""
        if "epsilon" in state:
            epsilon = np.asarray(state["epsilon"])
            self.epsilon = float(epsilon if epsilon.ndim == 0
                                 else epsilon[max(self.worker_index - 1, 0) % len(epsilon)])
        return {k: v for k, v in state.items() if k != "epsilon"}

    def forward_exploration(self, obs: np.ndarray) -> dict[str, np.ndarray]:
        """Epsilon-greedy actions."""
        actions = np.argmax(self.q_values(obs), axis=1)
        explore = self.rng.random(len(actions)) < self.epsilon
        random_actions = self.rng.integers(self.num_actions, size=len(actions))
        return {"actions": np.where(explore, random_actions, actions)}

    def forward_inference(self, obs: np.ndarray) -> dict[str, np.ndarray]:
        """Greedy actions."""
        return {"actions": np.argmax(self.q_values(obs), axis=1)}


class NumpyQModule(EpsilonGreedy):
    """The default Q-network's forward pass in NumPy (no torch in the runner's process)."""

    def __init__(self, info: SpaceInfo, model_config: dict, seed: int | None = None):
        super().__init__(info.action_dim, seed)
        self.info = info
        self.activation = _ACTIVATIONS[model_config["fcnet_activation"]]
        self.encoder: list[tuple[np.ndarray, np.ndarray]] = []
        self.advantages: tuple[np.ndarray, np.ndarray] | None = None
        self.value: tuple[np.ndarray, np.ndarray] | None = None

    def set_state(self, state: dict[str, np.ndarray]) -> None:
        """Take the torch module's `q.*` arrays (transposed once, here) and `epsilon` if given."""
        state = self._take_epsilon(state)

        def layer(name: str) -> tuple[np.ndarray, np.ndarray]:
            return (np.ascontiguousarray(state[f"{name}.weight"].T, dtype=np.float32),
                    np.asarray(state[f"{name}.bias"], dtype=np.float32))

        indices = sorted(int(k.split(".")[2]) for k in state
                         if k.startswith("q.encoder.") and k.endswith(".weight"))
        self.encoder = [layer(f"q.encoder.{i}") for i in indices]
        self.advantages = layer("q.advantages")
        self.value = layer("q.value") if "q.value.weight" in state else None

    def q_values(self, obs: np.ndarray) -> np.ndarray:
        x = preprocess(obs, self.info)
        for w, b in self.encoder:
            x = x @ w
            x += b
            self.activation(x)
        advantages = x @ self.advantages[0] + self.advantages[1]
        if self.value is None:
            return advantages
        value = x @ self.value[0] + self.value[1]
        return value + advantages - advantages.mean(axis=1, keepdims=True)


class TorchQInferenceModule(EpsilonGreedy):
    """A custom DQN module on a runner: Q-values from its torch network (torch is imported only
    by runners that hold one)."""

    def __init__(self, module: Any, seed: int | None = None):
        super().__init__(module.info.action_dim, seed)
        self.module = module

    def set_state(self, state: dict[str, np.ndarray]) -> None:
        self.module.set_state(self._take_epsilon(state))

    def q_values(self, obs: np.ndarray) -> np.ndarray:
        import torch

        with torch.no_grad():
            obs = torch.as_tensor(obs, device=self.module.device)
            return self.module.compute_q_values(obs).cpu().numpy()
