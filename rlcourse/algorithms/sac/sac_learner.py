"""SACLearner: SAC's three losses on a replay batch, and the critics' target updates.

For a batch of n-step transitions (s, a, R, s', done, n) with importance weights w, with
alpha = exp(log_alpha) and fresh (reparameterized) samples a~ ~ pi(.|s), a' ~ pi(.|s'), as in
Spinning Up's SAC:

    y            = R + gamma^n * (1 - done) * (min_j Q_target_j(s', a') - alpha * log pi(a'|s'))
    qf_loss      = sum_j mean(w * huber(Q_j(s, a) - y))                       (the critics)
    policy_loss  = mean(alpha * log pi(a~|s) - min_j Q_j(s, a~))               (the policy)
    alpha_loss   = -mean(log_alpha * (log pi(a~|s) + target_entropy))           (the temperature)

A step on alpha_loss shrinks alpha while the policy's entropy (-log pi) is above the target and
grows it below. The losses train disjoint weights, so one backward pass of their sum and one Adam
with a parameter group (and learning rate) per loss act as three. TD errors (Q1 - y) become the
rows' priorities, as in DQN (update_from_batch is DQN's).
"""

import contextlib
from collections.abc import Iterator

import torch
from torch import nn

from rlcourse.algorithms.dqn.dqn_learner import DQNLearner


@contextlib.contextmanager
def frozen(networks: list[nn.Module]) -> Iterator[None]:
    """No gradients into `networks` inside the block (the policy loss must not train the critics)."""
    for net in networks:
        net.requires_grad_(False)
    try:
        yield
    finally:
        for net in networks:
            net.requires_grad_(True)


def resolve_target_entropy(target_entropy: float | str, action_dim: int) -> float:
    """The entropy alpha steers to; "auto" means -dim(A) (Haarnoja et al. 2018)."""
    return -float(action_dim) if target_entropy == "auto" else float(target_entropy)


@torch.no_grad()
def bellman_target(module: nn.Module, batch: dict[str, torch.Tensor], gamma: float,
                   entropy_weight: torch.Tensor | float) -> torch.Tensor:
    """SAC's soft target y (above) with `entropy_weight` as alpha, for a fresh a' ~ pi(.|s')."""
    next_actions, next_logp = module.sample_actions(batch["new_obs"])
    next_q = module.compute_target_q_values(batch["new_obs"], next_actions)
    not_done = 1.0 - batch["terminateds"].float()
    return batch["rewards"] + gamma ** batch["n_step"].float() * not_done * (
        next_q - entropy_weight * next_logp)


def policy_loss_and_logp(module: nn.Module, obs: torch.Tensor, alpha: torch.Tensor
                         ) -> tuple[torch.Tensor, torch.Tensor]:
    """SAC's policy loss (above), judged by the frozen critics, and log pi(a~|s) for alpha's loss."""
    actions, logp = module.sample_actions(obs)
    with frozen(module.critics):
        q_policy = torch.stack(module.compute_q_values(obs, actions)).min(dim=0).values
    return (alpha.detach() * logp - q_policy).mean(), logp


def alpha_loss_of(log_alpha: torch.Tensor, logp: torch.Tensor, target_entropy: float
                  ) -> torch.Tensor:
    """The temperature's loss (above)."""
    return -(log_alpha * (logp.detach() + target_entropy)).mean()


PARAMETER_GROUPS = ("actor", "critic", "alpha")  # the optimizer's, each at its own learning rate


class SACLearner(DQNLearner):
    """DQN's replay-batch update and target schedule, with SAC's losses and three learning rates."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.target_entropy = resolve_target_entropy(self.config.target_entropy,
                                                     self.module.info.action_dim)

    def configure_optimizer(self) -> torch.optim.Optimizer:
        groups = self.module.parameter_groups()
        return torch.optim.Adam([{"params": groups[name], "lr": lr, "name": name}
                                 for name, lr in zip(PARAMETER_GROUPS, self.learning_rates(),
                                                     strict=True)], fused=True)

    def compute_loss(self, batch: dict[str, torch.Tensor]
                     ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The sum of the three losses, and `td_error` (one per row) for the priorities."""
        cfg, module = self.config, self.module
        alpha = module.log_alpha.exp()
        target = bellman_target(module, batch, cfg.gamma, alpha)  # draws a' first, then a~ below
        q_values = module.compute_q_values(batch["obs"], module.to_squashed(batch["actions"]))
        qf_loss = sum((batch["weights"] * nn.functional.huber_loss(
            q, target, reduction="none", delta=1.0)).mean() for q in q_values)
        policy_loss, logp = policy_loss_and_logp(module, batch["obs"], alpha)
        alpha_loss = alpha_loss_of(module.log_alpha, logp, self.target_entropy)
        td_error = q_values[0] - target
        return qf_loss + policy_loss + alpha_loss, {
            "qf_loss": qf_loss.detach(), "policy_loss": policy_loss.detach(),
            "alpha_loss": alpha_loss.detach(), "alpha_value": alpha.detach(),
            "log_alpha_value": module.log_alpha.detach(),
            "target_entropy": torch.tensor(self.target_entropy), "logps": logp.detach().mean(),
            "qf_mean": q_values[0].detach().mean(), "td_error_mean": td_error.detach().abs().mean(),
            "td_error": td_error.detach()}
