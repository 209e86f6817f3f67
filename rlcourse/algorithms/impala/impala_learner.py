"""IMPALALearner: V-trace targets from the current policy, then actor-critic losses."""

import numpy as np
import torch

from rlcourse.algorithms.impala.vtrace import vtrace
from rlcourse.core.learner.learner import Learner
from rlcourse.env.single_agent_episode import SingleAgentEpisode
from rlcourse.utils.framework import to_numpy
from rlcourse.utils.postprocessing import flatten_episodes


class IMPALALearner(Learner):
    """One gradient step per train batch; fragments stay whole and in order for V-trace."""

    def build_batch(self, episodes: list[SingleAgentEpisode]) -> dict[str, np.ndarray]:
        return flatten_episodes(episodes)

    def minibatch_indices(self, size: int, num_minibatches: int) -> list[slice]:
        return [slice(None)]  # the whole batch, in order

    def compute_loss(self, batch: dict[str, torch.Tensor]):
        cfg = self.config
        index = batch["obs_index"]
        # One forward pass over every observation, bootstrap ones included; the value head reuses
        # the policy's encoder output when the two share layers.
        all_obs = {"obs": batch["all_obs"]}
        out = self.module.forward_train(all_obs)
        all_values = self.module.compute_values(all_obs, out.get("embeddings"))
        values = all_values[index]
        dist = self.module.get_action_dist(out["action_dist_inputs"][index])
        target_logp = dist.log_prob(batch["actions"])
        # V-trace runs in NumPy: its inputs come back from the learner's device, its targets go there.
        behaviour_logp = to_numpy(batch["action_logp"])
        vs, pg_advantages = vtrace(
            behaviour_logp,
            to_numpy(target_logp) if cfg.vtrace else behaviour_logp,
            to_numpy(batch["rewards"]), to_numpy(values),
            to_numpy(all_values[index + 1]), to_numpy(batch["terminateds"]),
            to_numpy(batch["chunk_ends"]), cfg.gamma, cfg.vtrace_clip_rho_threshold,
            cfg.vtrace_clip_pg_rho_threshold)
        vs = self.to_device(vs, torch.float32)
        pg_advantages = self.to_device(pg_advantages, torch.float32)
        policy_loss = -(target_logp * pg_advantages).mean()
        vf_loss = 0.5 * (values - vs).pow(2).mean()
        entropy = dist.entropy().mean()
        total = policy_loss + cfg.vf_loss_coeff * vf_loss - cfg.entropy_coeff * entropy
        mean_rho = float(np.exp(to_numpy(target_logp) - behaviour_logp).mean())
        return total, {"total_loss": total.detach(), "policy_loss": policy_loss.detach(),
                       "vf_loss": vf_loss.detach(), "entropy": entropy.detach(),
                       "mean_importance_ratio": mean_rho}
