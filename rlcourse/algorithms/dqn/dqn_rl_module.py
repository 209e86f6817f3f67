"""DefaultDQNModule: a Q-network for Discrete actions (optionally dueling) and its target copy.

    Q(s, .) = head(encoder(s))                          plain
    Q(s, a) = V(s) + A(s, a) - mean_a' A(s, a')         dueling (Wang et al. 2016)

Checkpoints keep the target network `target_q`; runners get only `q` and run it in NumPy with an
`EpsilonGreedy` head (core/rl_module/numpy_mlp.py).
"""

import copy

import torch
from torch import nn

from rlcourse.core.rl_module.default_model_config import space_info
from rlcourse.core.rl_module.rl_module import _TORCH_ACTIVATIONS, RLModule, mlp


class QNetwork(nn.Module):
    """An MLP encoder, then one Q-value per action (or a value and advantages, if dueling)."""

    def __init__(self, obs_dim: int, num_actions: int, hiddens: list[int], activation: str,
                 dueling: bool):
        super().__init__()
        self.encoder = mlp([obs_dim, *hiddens], activation).append(_TORCH_ACTIVATIONS[activation]())
        self.advantages = nn.Linear(hiddens[-1], num_actions)
        self.value = nn.Linear(hiddens[-1], 1) if dueling else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = self.encoder(x)
        advantages = self.advantages(features)
        if self.value is None:
            return advantages
        return self.value(features) + advantages - advantages.mean(dim=-1, keepdim=True)


class DefaultDQNModule(RLModule):
    """Online Q-network `q` and target network `target_q`, sized from the spaces and model_config."""

    inference_prefixes = ("q.",)  # runners act with the online network only

    def setup(self) -> None:
        self.info = space_info(self.observation_space, self.action_space)
        if not self.info.discrete_actions:
            raise ValueError(f"DQN needs a Discrete action space, not {self.action_space}.")
        self.q = QNetwork(self.info.obs_dim, self.info.action_dim,
                          list(self.model_config["fcnet_hiddens"]),
                          self.model_config["fcnet_activation"],
                          self.model_config.get("dueling", False))
        self.target_q = copy.deepcopy(self.q).requires_grad_(False)

    def _obs(self, obs: torch.Tensor) -> torch.Tensor:
        return obs.float().reshape(len(obs), -1)

    def compute_q_values(self, obs: torch.Tensor) -> torch.Tensor:
        """Q(obs, a) for every action, shape [B, num_actions]."""
        return self.q(self._obs(obs))

    def compute_target_q_values(self, obs: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return self.target_q(self._obs(obs))

    def _forward(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        # Greedy actions are the argmax of these "logits" (Algorithm.compute_actions uses that).
        return {"action_dist_inputs": self.compute_q_values(batch["obs"])}

    @torch.no_grad()
    def update_target(self, tau: float) -> None:
        """target <- tau * online + (1 - tau) * target (tau = 1: a hard copy)."""
        for target, online in zip(self.target_q.parameters(), self.q.parameters(), strict=True):
            target.lerp_(online, tau)
