"""CQLLearner: SAC's losses on recorded transitions, with CQL's conservative penalty on the critics
(Kumar et al. 2020, CQL(H), as RLlib's CQL) and behaviour cloning as the policy's loss for its
first `bc_iters` updates.

For a batch of recorded rows (s, a, r, s', done), N = num_actions and T = temperature, each critic
Q_j is also judged at 3N sampled actions a_k per state s: N uniform in [-1, 1]^d (density
mu = 2^-d), N from pi(.|s) and N from pi(.|s') (mu = pi, the log-probabilities detached):

    penalty_j    = mean_s [ T * logsumexp_k ((Q_j(s, a_k) - log mu(a_k)) / T) ] - mean_(s,a) Q_j(s, a)
    y            = r + gamma * (1 - done) * min_j Q_target_j(s', a')   (+ SAC's entropy term unless
                                                                       deterministic_backup)
    qf_loss      = sum_j [ mean((Q_j(s, a) - y)^2) + min_q_weight * penalty_j ]
    policy_loss  = mean(alpha * log pi(a~|s) - log pi(a|s))             for the first bc_iters updates
                   mean(alpha * log pi(a~|s) - min_j Q_j(s, a~))        after them (SAC's)
    alpha_loss   = SAC's

The logsumexp is a soft maximum of Q over actions (an importance-sampled log of the integral of
exp Q): lowering it pushes Q down wherever it is high, and the second term pushes it back up on the
recorded actions, so the actions the data never took end up valued below those it took.
"""

import math

import torch
from torch import nn

from rlcourse.algorithms.sac.sac_learner import (
    SACLearner,
    alpha_loss_of,
    bellman_target,
    policy_loss_and_logp,
)


def conservative_penalty(q_sampled: torch.Tensor, log_mu: torch.Tensor, q_data: torch.Tensor,
                         temperature: float) -> torch.Tensor:
    """penalty_j (above) for one critic: `q_sampled` and `log_mu` [B, K], `q_data` [B]."""
    soft_max = temperature * torch.logsumexp((q_sampled - log_mu) / temperature, dim=1)
    return soft_max.mean() - q_data.mean()


def sampled_action_q_values(module: nn.Module, obs: torch.Tensor, new_obs: torch.Tensor,
                            num_actions: int) -> tuple[list[torch.Tensor], torch.Tensor]:
    """Each critic's Q(s, a_k) at the 3N actions per state (uniform, pi(.|s), pi(.|s')) as [B, 3N]
    tensors, and log mu(a_k), [B, 3N]. Only the critics get gradients."""
    rows, action_dim = len(obs), module.info.action_dim
    obs_repeated = obs.repeat_interleave(num_actions, dim=0)  # each state N times, in order
    with torch.no_grad():  # the sampled actions are where Q is judged, not a path to the policy
        current, current_logp = module.sample_actions(obs_repeated)
        following, following_logp = module.sample_actions(new_obs.repeat_interleave(num_actions, 0))
    uniform = torch.rand_like(current) * 2.0 - 1.0
    log_mu = torch.cat([torch.full_like(current_logp, -action_dim * math.log(2.0)),
                        current_logp, following_logp])
    q_values = module.compute_q_values(obs_repeated.repeat(3, 1),
                                       torch.cat([uniform, current, following]))

    def per_state(values: torch.Tensor) -> torch.Tensor:  # [3 * B * N] -> [B, 3N]
        return values.view(3, rows, num_actions).permute(1, 0, 2).reshape(rows, 3 * num_actions)

    return [per_state(q) for q in q_values], per_state(log_mu)


class CQLLearner(SACLearner):
    """SAC's learner (optimizers, target updates, state) with CQL's losses."""

    def compute_loss(self, batch: dict[str, torch.Tensor]
                     ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        cfg, module = self.config, self.module
        alpha = module.log_alpha.exp()
        target = bellman_target(module, batch, cfg.gamma,
                                0.0 if cfg.deterministic_backup else alpha)
        q_data = module.compute_q_values(batch["obs"], module.to_squashed(batch["actions"]))
        q_sampled, log_mu = sampled_action_q_values(module, batch["obs"], batch["new_obs"],
                                                    cfg.num_actions)
        penalties = [conservative_penalty(q_k, log_mu, q, cfg.temperature)
                     for q_k, q in zip(q_sampled, q_data, strict=True)]
        td_losses = [nn.functional.mse_loss(q, target) for q in q_data]
        cql_loss = cfg.min_q_weight * sum(penalties)
        qf_loss = sum(td_losses) + cql_loss
        if self.num_updates < cfg.bc_iters:  # first clone the recorded actions
            _, logp = module.sample_actions(batch["obs"])
            policy_loss = (alpha.detach() * logp
                           - module.action_logp(batch["obs"], batch["actions"])).mean()
        else:
            policy_loss, logp = policy_loss_and_logp(module, batch["obs"], alpha)
        alpha_loss = alpha_loss_of(module.log_alpha, logp, self.target_entropy)
        td_error = q_data[0] - target
        return qf_loss + policy_loss + alpha_loss, {
            "qf_loss": qf_loss.detach(), "cql_loss": cql_loss.detach(),
            "policy_loss": policy_loss.detach(), "alpha_loss": alpha_loss.detach(),
            "alpha_value": alpha.detach(), "log_alpha_value": module.log_alpha.detach(),
            "logps": logp.detach().mean(), "qf_mean": q_data[0].detach().mean(),
            "td_error_mean": td_error.detach().abs().mean(), "td_error": td_error.detach()}
