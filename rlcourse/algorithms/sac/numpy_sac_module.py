"""The runners' form of DefaultSACModule: its squashed-Gaussian policy in NumPy (no torch).

    explore:  u ~ N(mean, std),  action = low + (tanh(u) + 1) / 2 * (high - low)
    greedy:   action = low + (tanh(mean) + 1) / 2 * (high - low)

The policy network is the default MLP's (`pi.*`, run by NumpyMLPModule); the env's bounds arrive
with the weights (`action_low`, `action_high`). A custom SAC module (a DefaultSACModule subclass)
acts the same way on runners, with its torch network (`TorchSACInferenceModule`).
"""

from typing import Any

import numpy as np

from rlcourse.core.rl_module.numpy_mlp import NumpyMLPModule, split_gaussian

LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0  # as sac_rl_module.py clamps them


class SquashedGaussian:
    """Exploring and greedy actions from a subclass's `mean_and_log_std(obs)` and the bounds."""

    def __init__(self, seed: int | None = None):
        self.rng = np.random.default_rng(seed)
        self.low = self.high = None  # until the first weights bring them

    def mean_and_log_std(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def _take_bounds(self, state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Keep the action bounds; return the other weights."""
        self.low = np.asarray(state["action_low"], dtype=np.float32)
        self.high = np.asarray(state["action_high"], dtype=np.float32)
        return {k: v for k, v in state.items() if k not in ("action_low", "action_high")}

    def _to_env(self, u: np.ndarray) -> np.ndarray:
        return self.low + (np.tanh(u) + 1.0) * 0.5 * (self.high - self.low)

    def forward_exploration(self, obs: np.ndarray) -> dict[str, np.ndarray]:
        """Sampled actions, squashed into the bounds."""
        mean, log_std = self.mean_and_log_std(obs)
        u = mean + np.exp(log_std) * self.rng.standard_normal(mean.shape, dtype=np.float32)
        return {"actions": self._to_env(u)}

    def forward_inference(self, obs: np.ndarray) -> dict[str, np.ndarray]:
        """The mean's action, squashed into the bounds."""
        return {"actions": self._to_env(self.mean_and_log_std(obs)[0])}


class NumpySACModule(SquashedGaussian):
    """The default SAC policy's forward pass in NumPy."""

    def __init__(self, info, model_config: dict, seed: int | None = None):
        super().__init__(seed)
        self.mlp = NumpyMLPModule(info, model_config)

    def set_state(self, state: dict[str, np.ndarray]) -> None:
        """Take the torch module's `pi.*` arrays and the action bounds."""
        self.mlp.set_state(self._take_bounds(state))

    def mean_and_log_std(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        mean, log_std = split_gaussian(self.mlp.action_dist_inputs(obs))
        return mean, np.clip(log_std, LOG_STD_MIN, LOG_STD_MAX)


class TorchSACInferenceModule(SquashedGaussian):
    """A custom SAC module on a runner: the Gaussian from its torch policy (torch is imported only
    by runners that hold one)."""

    def __init__(self, module: Any, seed: int | None = None):
        super().__init__(seed)
        self.module = module

    def set_state(self, state: dict[str, np.ndarray]) -> None:
        self.module.set_state(state)
        self._take_bounds(state)

    def mean_and_log_std(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        import torch

        with torch.no_grad():
            obs = torch.as_tensor(obs, device=self.module.device)
            inputs = self.module.forward_inference({"obs": obs})
        mean, log_std = inputs["action_dist_inputs"].chunk(2, dim=-1)
        return mean.cpu().numpy(), log_std.cpu().numpy()
