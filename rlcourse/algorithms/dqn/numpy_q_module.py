"""The runners' form of DefaultDQNModule: the online Q-network in NumPy, acting epsilon-greedily.

With probability `epsilon` a runner takes a uniformly random action, else the action of the largest
Q-value. The algorithm ships `epsilon` with the weights (the key "epsilon" beside the `q.*` arrays),
so every runner explores as the schedule says now; a runner keeps its epsilon until new weights
bring another (Ape-X would give each runner its own).
"""

import numpy as np

from rlcourse.core.rl_module.default_model_config import SpaceInfo
from rlcourse.core.rl_module.numpy_mlp import _ACTIVATIONS, preprocess


class NumpyQModule:
    """Q-values, greedy and epsilon-greedy actions for a batch of observations."""

    def __init__(self, info: SpaceInfo, model_config: dict, seed: int | None = None):
        self.info = info
        self.activation = _ACTIVATIONS[model_config["fcnet_activation"]]
        self.encoder: list[tuple[np.ndarray, np.ndarray]] = []
        self.advantages: tuple[np.ndarray, np.ndarray] | None = None
        self.value: tuple[np.ndarray, np.ndarray] | None = None
        self.epsilon = 1.0  # until the algorithm's first weights say otherwise
        self.rng = np.random.default_rng(seed)

    def set_state(self, state: dict[str, np.ndarray]) -> None:
        """Take the torch module's `q.*` arrays (transposed once, here) and `epsilon` if given."""
        def layer(name: str) -> tuple[np.ndarray, np.ndarray]:
            return (np.ascontiguousarray(state[f"{name}.weight"].T, dtype=np.float32),
                    np.asarray(state[f"{name}.bias"], dtype=np.float32))

        indices = sorted(int(k.split(".")[2]) for k in state
                         if k.startswith("q.encoder.") and k.endswith(".weight"))
        self.encoder = [layer(f"q.encoder.{i}") for i in indices]
        self.advantages = layer("q.advantages")
        self.value = layer("q.value") if "q.value.weight" in state else None
        if "epsilon" in state:
            self.epsilon = float(state["epsilon"])

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

    def forward_exploration(self, obs: np.ndarray) -> dict[str, np.ndarray]:
        """Epsilon-greedy actions."""
        actions = np.argmax(self.q_values(obs), axis=1)
        explore = self.rng.random(len(actions)) < self.epsilon
        random_actions = self.rng.integers(self.info.action_dim, size=len(actions))
        return {"actions": np.where(explore, random_actions, actions)}

    def forward_inference(self, obs: np.ndarray) -> dict[str, np.ndarray]:
        """Greedy actions."""
        return {"actions": np.argmax(self.q_values(obs), axis=1)}
