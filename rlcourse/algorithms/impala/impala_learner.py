"""IMPALALearner: V-trace targets from the current policy, then actor-critic losses."""

import numpy as np
import torch

from rlcourse.algorithms.impala.vtrace import vtrace
from rlcourse.core.learner.learner import Learner
from rlcourse.env.single_agent_episode import SingleAgentEpisode
from rlcourse.utils.postprocessing import flatten_episodes


class IMPALALearner(Learner):
    """One gradient step per train batch; fragments stay whole and in order for V-trace."""

    def build_batch(self, episodes: list[SingleAgentEpisode]) -> dict[str, torch.Tensor]:
        flat = flatten_episodes(episodes)
        return {k: torch.as_tensor(v) for k, v in flat.items()}

    def minibatch_indices(self, size: int, num_minibatches: int) -> list[slice]:
        return [slice(None)]  # the whole batch, in order

    def compute_loss(self, batch: dict[str, torch.Tensor]):
        cfg = self.config
        index = batch["obs_index"]
        all_values = self.module.compute_values({"obs": batch["all_obs"]})
        values = all_values[index]
        dist = self.module.get_action_dist(
            self.module.forward_train({"obs": batch["all_obs"][index]})["action_dist_inputs"])
        target_logp = dist.log_prob(batch["actions"])
        behaviour_logp = batch["action_logp"].numpy()
        vs, pg_advantages = vtrace(
            behaviour_logp,
            target_logp.detach().numpy() if cfg.vtrace else behaviour_logp,
            batch["rewards"].numpy(), values.detach().numpy(),
            all_values[index + 1].detach().numpy(), batch["terminateds"].numpy(),
            batch["chunk_ends"].numpy(), cfg.gamma, cfg.vtrace_clip_rho_threshold,
            cfg.vtrace_clip_pg_rho_threshold)
        vs = torch.as_tensor(vs, dtype=torch.float32)
        pg_advantages = torch.as_tensor(pg_advantages, dtype=torch.float32)
        policy_loss = -(target_logp * pg_advantages).mean()
        vf_loss = 0.5 * (values - vs).pow(2).mean()
        entropy = dist.entropy().mean()
        total = policy_loss + cfg.vf_loss_coeff * vf_loss - cfg.entropy_coeff * entropy
        mean_rho = float(np.exp(target_logp.detach().numpy() - behaviour_logp).mean())
        return total, {"total_loss": total.detach(), "policy_loss": policy_loss.detach(),
                       "vf_loss": vf_loss.detach(), "entropy": entropy.detach(),
                       "mean_importance_ratio": mean_rho}
