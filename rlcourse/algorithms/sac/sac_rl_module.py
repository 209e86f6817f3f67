"""DefaultSACModule: a squashed-Gaussian policy, twin Q-networks with target copies, and log(alpha).

    policy   u ~ N(mean(s), std(s)),  a = tanh(u) in [-1, 1]^d,  env action = center + half * a
    critics  Q1(s, a), Q2(s, a) on [s, a] with a in [-1, 1]^d; target copies follow them by `tau`

The log-probability is that of the squashed action a (Spinning Up's and RLlib's convention):

    log pi(a|s) = sum_i [ log N(u_i; mean_i, std_i) - log(1 - tanh(u_i)^2) ]

with log(1 - tanh(u)^2) = 2 * (log 2 - u - softplus(-2u)), finite for large |u|. The temperature
`log_alpha` is a weight of this module (RLlib keeps it in the Learner), so checkpoints and
data-parallel learners carry it like any weight. Runners get only the policy (`pi.*`).
"""

import copy
import math

import gymnasium as gym
import torch
from torch import nn

from rlcourse.core.rl_module.default_model_config import space_info
from rlcourse.core.rl_module.rl_module import RLModule, mlp

LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0  # std in [2e-9, 7.4]: no collapse, no huge noise
SQUASH_EPS = 1e-6  # recorded actions on the bounds are read this far inside them


def squashed_gaussian_logp(u: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor
                           ) -> torch.Tensor:
    """log pi(tanh(u)) for pre-squash samples `u` of N(mean, exp(log_std)), summed over dims."""
    normal = torch.distributions.Normal(mean, log_std.exp(), validate_args=False)
    tanh_correction = 2.0 * (math.log(2.0) - u - nn.functional.softplus(-2.0 * u))
    return (normal.log_prob(u) - tanh_correction).sum(dim=-1)


class DefaultSACModule(RLModule):
    """`pi` (mean and log-std), `qf` and `qf_twin` (if `twin_q`), their targets, and `log_alpha`."""

    inference_prefixes = ("pi.",)  # runners act with the policy alone

    def setup(self) -> None:
        self.info = space_info(self.observation_space, self.action_space)
        if self.info.discrete_actions:
            raise ValueError(f"SAC needs a Box action space, not {self.action_space}.")
        hiddens, act = list(self.model_config["fcnet_hiddens"]), self.model_config["fcnet_activation"]
        obs_dim, act_dim = self.info.obs_dim, self.info.action_dim
        self.pi = mlp([obs_dim, *hiddens, 2 * act_dim], act)
        twin = self.model_config.get("twin_q", True)
        self.qf = mlp([obs_dim + act_dim, *hiddens, 1], act)
        self.qf_twin = mlp([obs_dim + act_dim, *hiddens, 1], act) if twin else None
        self.target_qf = copy.deepcopy(self.qf).requires_grad_(False)
        self.target_qf_twin = copy.deepcopy(self.qf_twin).requires_grad_(False) if twin else None
        self.log_alpha = nn.Parameter(torch.tensor(
            math.log(self.model_config.get("initial_alpha", 1.0)), dtype=torch.float32))
        space: gym.spaces.Box = self.action_space
        self.register_buffer("action_low", torch.as_tensor(space.low, dtype=torch.float32))
        self.register_buffer("action_high", torch.as_tensor(space.high, dtype=torch.float32))

    def _obs(self, obs: torch.Tensor) -> torch.Tensor:
        return obs.float().reshape(obs.shape[0], -1)

    def _forward(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The Gaussian's mean and clamped log-std, as [mean, log_std] halves."""
        mean, log_std = self.pi(self._obs(batch["obs"])).chunk(2, dim=-1)
        return {"action_dist_inputs": torch.cat(
            [mean, log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)], dim=-1)}

    def to_env_actions(self, squashed: torch.Tensor) -> torch.Tensor:
        """[-1, 1] -> [low, high]."""
        return self.action_low + (squashed + 1.0) * 0.5 * (self.action_high - self.action_low)

    def to_squashed(self, env_actions: torch.Tensor) -> torch.Tensor:
        """[low, high] -> [-1, 1]: how the critics see the replayed actions."""
        return 2.0 * (env_actions - self.action_low) / (self.action_high - self.action_low) - 1.0

    def sample_actions(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Reparameterized samples a = tanh(mean + std * noise) in [-1, 1] and their log pi(a|s)."""
        mean, log_std = self._forward({"obs": obs})["action_dist_inputs"].chunk(2, dim=-1)
        u = mean + log_std.exp() * torch.randn_like(mean)
        return torch.tanh(u), squashed_gaussian_logp(u, mean, log_std)

    def action_logp(self, obs: torch.Tensor, env_actions: torch.Tensor) -> torch.Tensor:
        """log pi(a|s) of given env actions (recorded ones), squashed and kept inside (-1, 1)
        so that atanh stays finite for actions on the bounds."""
        mean, log_std = self._forward({"obs": obs})["action_dist_inputs"].chunk(2, dim=-1)
        squashed = self.to_squashed(env_actions).clamp(-1.0 + SQUASH_EPS, 1.0 - SQUASH_EPS)
        return squashed_gaussian_logp(torch.atanh(squashed), mean, log_std)

    def greedy_actions(self, action_dist_inputs: torch.Tensor) -> torch.Tensor:
        """The env action of the Gaussian's mean: tanh(mean), rescaled."""
        return self.to_env_actions(torch.tanh(action_dist_inputs.chunk(2, dim=-1)[0]))

    def get_action_dist(self, action_dist_inputs: torch.Tensor) -> torch.distributions.Distribution:
        """The policy in env units (for compute_actions(explore=True)): tanh, then the rescaling."""
        mean, log_std = action_dist_inputs.chunk(2, dim=-1)
        normal = torch.distributions.Independent(
            torch.distributions.Normal(mean, log_std.exp(), validate_args=False), 1)
        half = 0.5 * (self.action_high - self.action_low)
        rescale = torch.distributions.AffineTransform(self.action_low + half, half, event_dim=1)
        return torch.distributions.TransformedDistribution(
            normal, [torch.distributions.TanhTransform(cache_size=1), rescale],
            validate_args=False)

    @property
    def critics(self) -> list[nn.Module]:
        return [self.qf] if self.qf_twin is None else [self.qf, self.qf_twin]

    @property
    def target_critics(self) -> list[nn.Module]:
        return [self.target_qf] if self.qf_twin is None else [self.target_qf, self.target_qf_twin]

    def compute_q_values(self, obs: torch.Tensor, squashed_actions: torch.Tensor,
                         critics: list[nn.Module] | None = None) -> list[torch.Tensor]:
        """[Q1(s, a), Q2(s, a)] (one entry without twin_q), each of shape [B]."""
        x = torch.cat([self._obs(obs), squashed_actions], dim=-1)
        return [q(x).squeeze(-1) for q in (critics or self.critics)]

    @torch.no_grad()
    def compute_target_q_values(self, obs: torch.Tensor, squashed_actions: torch.Tensor
                                ) -> torch.Tensor:
        """min(Q1_target, Q2_target)(s, a), shape [B]: the twin trick against overestimation."""
        return torch.stack(self.compute_q_values(obs, squashed_actions, self.target_critics)
                           ).min(dim=0).values

    @torch.no_grad()
    def update_target(self, tau: float) -> None:
        """target <- tau * online + (1 - tau) * target, for each critic."""
        for target_net, online_net in zip(self.target_critics, self.critics, strict=True):
            for target, online in zip(target_net.parameters(), online_net.parameters(), strict=True):
                target.lerp_(online, tau)

    def parameter_groups(self) -> dict[str, list[nn.Parameter]]:
        """The weights each loss trains: the policy's, the critics', the temperature."""
        return {"actor": list(self.pi.parameters()),
                "critic": [p for q in self.critics for p in q.parameters()],
                "alpha": [self.log_alpha]}
