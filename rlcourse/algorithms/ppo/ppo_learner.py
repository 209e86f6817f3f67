"""PPOLearner: GAE targets for the batch, and the clipped-surrogate loss for each minibatch."""

import numpy as np
import torch

from rlcourse.core.learner.learner import Learner
from rlcourse.env.single_agent_episode import SingleAgentEpisode
from rlcourse.utils.postprocessing import compute_gae, flatten_episodes
from rlcourse.utils.state_values import check_number


def explained_variance(targets: torch.Tensor, predictions: torch.Tensor) -> torch.Tensor:
    """1 - Var(targets - predictions) / Var(targets), at least -1 (RLlib's vf_explained_var): 1 when
    the value network predicts the targets, 0 when it does no better than their mean."""
    ratio = (targets - predictions).var() / (targets.var() + 1e-8)
    return torch.clamp(1.0 - ratio, min=-1.0)


class PPOLearner(Learner):
    """Policy loss, value loss, entropy bonus and an optional KL penalty, as in RLlib's PPO."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.curr_kl_coeff = self.config.kl_coeff

    def build_batch(self, episodes: list[SingleAgentEpisode]) -> dict[str, torch.Tensor]:
        """Flatten the chunks, compute values (bootstrap observations too), GAE, normalize."""
        flat = flatten_episodes(episodes)
        all_obs = self.to_device(flat["all_obs"])  # on the learner's device once, for both uses
        with torch.no_grad():
            all_values = self.module.compute_values({"obs": all_obs}).cpu().numpy()
        index = flat["obs_index"]
        advantages, value_targets = compute_gae(
            flat["rewards"], all_values[index], all_values[index + 1], flat["terminateds"],
            flat["chunk_ends"], self.config.gamma, self.config.lambda_)
        # Standardize advantages over the whole batch; across all learners when data-parallel.
        total, total_sq, count = self.all_reduce_sum(
            np.array([advantages.sum(), (advantages**2).sum(), len(advantages)], np.float64))
        mean = total / count
        std = np.sqrt(max(total_sq / count - mean**2, 0.0))
        advantages = (advantages - mean) / (std + 1e-8)
        return {"obs": all_obs[self.to_device(index)],
                "actions": self.to_device(flat["actions"]),
                "action_logp": self.to_device(flat["action_logp"]),
                "advantages": self.to_device(advantages, torch.float32),
                "value_targets": self.to_device(value_targets, torch.float32)}

    def compute_loss(self, batch: dict[str, torch.Tensor]):
        cfg = self.config
        out = self.module.forward_train(batch)
        dist = self.module.get_action_dist(out["action_dist_inputs"])
        logp = dist.log_prob(batch["actions"])
        log_ratio = logp - batch["action_logp"]
        ratio = log_ratio.exp()
        adv = batch["advantages"]
        surrogate = torch.min(ratio * adv, ratio.clamp(1 - cfg.clip_param, 1 + cfg.clip_param) * adv)
        policy_loss = -surrogate.mean()
        values = self.module.compute_values(batch, out.get("embeddings"))
        vf_loss_unclipped = (values - batch["value_targets"]).pow(2)
        vf_loss = vf_loss_unclipped.clamp(max=cfg.vf_clip_param).mean()
        entropy = dist.entropy().mean()
        total = policy_loss + cfg.vf_loss_coeff * vf_loss - cfg.entropy_coeff * entropy
        # KL(old || new) estimated from samples of the old policy (Schulman's k3 estimator); RLlib
        # reports it as 0 and leaves curr_kl_coeff out when the KL loss is off.
        mean_kl, kl_results = torch.zeros(()), {}
        if cfg.use_kl_loss:
            mean_kl = ((ratio - 1) - log_ratio).mean()
            total = total + self.curr_kl_coeff * mean_kl
            kl_results = {"curr_kl_coeff": self.curr_kl_coeff}
        return total, {"total_loss": total.detach(), "policy_loss": policy_loss.detach(),
                       "vf_loss": vf_loss.detach(),
                       "vf_loss_unclipped": vf_loss_unclipped.mean().detach(),
                       "vf_explained_var": explained_variance(batch["value_targets"],
                                                              values.detach()),
                       "entropy": entropy.detach(), "mean_kl_loss": mean_kl.detach(), **kl_results}

    def get_state(self):
        return {**super().get_state(), "curr_kl_coeff": self.curr_kl_coeff}

    def check_state(self, state, name=str):
        super().check_state(state, name)
        check_number(state["curr_kl_coeff"], name("curr_kl_coeff"), low=0)

    def set_state(self, state):
        super().set_state(state)
        self.curr_kl_coeff = state["curr_kl_coeff"]

    def update(self, episodes, num_minibatches=None):
        results = super().update(episodes, num_minibatches)
        if self.config.use_kl_loss:  # adapt the KL penalty towards kl_target, as RLlib does
            # Averaged over learners so that every learner keeps the same coefficient.
            kl = self.all_reduce_sum(np.array([results["mean_kl_loss"]]))[0] / self.world_size
            if kl > 2.0 * self.config.kl_target:
                self.curr_kl_coeff *= 1.5
            elif kl < 0.5 * self.config.kl_target:
                self.curr_kl_coeff *= 0.5
        return results
