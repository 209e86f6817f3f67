"""APPOLearner: PPO's clipped surrogate on V-trace advantages, against a target network.

For a batch sampled by the runners' policy mu, the learner's policy pi and the target network's
older policy pi_old (RLlib's APPO loss, with IMPACT's target-worker clipping):

    vs_t, A_t   = V-trace targets and advantages for pi_old (vtrace.py)
    r_t         = min(mu / pi_old, target_worker_clipping) * pi / mu
    policy_loss = -mean(min(r_t * A_t, clip(r_t, 1 - clip_param, 1 + clip_param) * A_t))
    loss        = policy_loss + vf_loss_coeff * 0.5 * mean((V - vs)^2) - entropy_coeff * entropy
                  (+ kl_coeff * KL(pi_old || pi) with use_kl_loss)

Every `target_network_update_interval` updates the target network moves to the policy (by tau).
"""

import copy
from typing import Any

import torch

from rlcourse.algorithms.impala.impala_learner import IMPALALearner
from rlcourse.algorithms.ppo.ppo_learner import adapted_kl_coeff
from rlcourse.core.learner.learner import forward_all_obs, to_cpu
from rlcourse.utils.state_values import check_counter, check_like, check_number


class APPOLearner(IMPALALearner):
    """IMPALA's learner with the APPO loss, a target network and an adaptive KL coefficient."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.target_module = copy.deepcopy(self.module).requires_grad_(False)
        self.curr_kl_coeff = self.config.kl_coeff
        self.num_target_updates = 0

    def join_group(self, rank: int, world_size: int) -> None:
        """Rank 0's weights, and its target network: a copy of them, as it has not updated yet
        (each learner's own would otherwise stay a random one until the first target update)."""
        super().join_group(rank, world_size)
        self.target_module.load_state_dict(self.module.state_dict())

    def compute_loss(self, batch: dict[str, torch.Tensor]):
        cfg = self.config
        with torch.no_grad():
            old = forward_all_obs(self.target_module, batch, values=False)["action_dist_inputs"]
            old_dist = self.target_module.get_action_dist(old[batch["obs_index"]])
            old_logp = old_dist.log_prob(batch["actions"])
        values, dist, logp, vs, advantages = self.forward_with_vtrace(batch, vtrace_logp=old_logp)
        behaviour_logp = batch["action_logp"]
        is_ratio = torch.clamp(torch.exp(behaviour_logp - old_logp), 0.0, cfg.target_worker_clipping)
        ratio = is_ratio * torch.exp(logp - behaviour_logp)
        surrogate = torch.min(ratio * advantages,
                              ratio.clamp(1 - cfg.clip_param, 1 + cfg.clip_param) * advantages)
        total, stats = self.actor_critic_loss(-surrogate.mean(), values, vs, dist,
                                              mean_importance_ratio=is_ratio.mean().detach())
        mean_kl = torch.zeros(())  # RLlib reports 0 when the KL loss is off
        if cfg.use_kl_loss:
            mean_kl = torch.distributions.kl_divergence(old_dist, dist).mean()
            total = total + self.curr_kl_coeff * mean_kl
            stats.update(total_loss=total.detach(), curr_kl_coeff=self.curr_kl_coeff)
        return total, {**stats, "mean_kl_loss": mean_kl.detach()}

    def update(self, episodes, num_minibatches=None):
        results = super().update(episodes, num_minibatches)
        if self.num_updates % self.config.target_network_update_interval == 0:
            self.update_target_network()
        if self.config.use_kl_loss:
            self.curr_kl_coeff = adapted_kl_coeff(self, results["mean_kl_loss"])
        return {**results, "num_target_updates": self.num_target_updates}

    @torch.no_grad()
    def update_target_network(self) -> None:
        """target <- tau * policy + (1 - tau) * target (tau = 1, RLlib's default: a copy)."""
        for target, online in zip(self.target_module.parameters(), self.module.parameters(),
                                  strict=True):
            target.lerp_(online, self.config.tau)
        self.num_target_updates += 1

    def get_state(self) -> dict[str, Any]:
        return {**super().get_state(), "target_module": to_cpu(self.target_module.state_dict()),
                "curr_kl_coeff": self.curr_kl_coeff, "num_target_updates": self.num_target_updates}

    def check_state(self, state, name=str):
        super().check_state(state, name)
        check_like(state["target_module"], to_cpu(self.target_module.state_dict()),
                   name("target_module"))
        check_number(state["curr_kl_coeff"], name("curr_kl_coeff"), low=0)
        check_counter(state["num_target_updates"], name("num_target_updates"))

    def set_state(self, state):
        super().set_state(state)
        self.target_module.load_state_dict(state["target_module"])
        self.curr_kl_coeff = state["curr_kl_coeff"]
        self.num_target_updates = state["num_target_updates"]
