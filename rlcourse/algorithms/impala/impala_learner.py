"""IMPALALearner: V-trace targets from the current policy, then actor-critic losses."""

import numpy as np
import torch

from rlcourse.algorithms.impala.vtrace import vtrace
from rlcourse.core import STATE_IN, STATE_OUT
from rlcourse.core.learner.learner import Learner, forward_all_obs
from rlcourse.env.single_agent_episode import SingleAgentEpisode
from rlcourse.utils.framework import to_numpy
from rlcourse.utils.postprocessing import flatten_episodes


class IMPALALearner(Learner):
    """One gradient step per train batch; fragments stay whole and in order for V-trace. A
    stateful module runs over padded sequences of each chunk's observations; V-trace runs over the
    real steps, chunk by chunk, as for a stateless one."""

    def build_batch(self, episodes: list[SingleAgentEpisode]) -> dict[str, np.ndarray]:
        flat = flatten_episodes(episodes)
        per_step = {k: v for k, v in flat.items() if k not in ("all_obs", STATE_IN, STATE_OUT)}
        return {**per_step, **self.all_obs_batch(flat)}

    def minibatch_indices(self, size: int, num_minibatches: int) -> list[slice]:
        return [slice(None)]  # the whole batch, in order

    def compute_loss(self, batch: dict[str, torch.Tensor]):
        values, dist, logp, vs, pg_advantages = self.forward_with_vtrace(batch)
        policy_loss = -(logp * pg_advantages).mean()
        mean_rho = float(np.exp(to_numpy(logp) - to_numpy(batch["action_logp"])).mean())
        return self.actor_critic_loss(policy_loss, values, vs, dist, mean_importance_ratio=mean_rho)

    def forward_with_vtrace(self, batch: dict[str, torch.Tensor],
                            vtrace_logp: torch.Tensor | None = None) -> tuple[torch.Tensor, ...]:
        """The module's values, action distribution and log-probs of the batch's actions, and
        V-trace's targets and advantages for `vtrace_logp`'s policy (default: the module's)."""
        cfg = self.config
        index = batch["obs_index"]
        # One forward pass over every observation, bootstrap ones included.
        out = forward_all_obs(self.module, batch)
        all_values = out["values"]
        values = all_values[index]
        dist = self.module.get_action_dist(out["action_dist_inputs"][index])
        logp = dist.log_prob(batch["actions"])
        # V-trace runs in NumPy: its inputs come back from the learner's device, its targets go there.
        behaviour_logp = to_numpy(batch["action_logp"])
        target_logp = to_numpy(logp if vtrace_logp is None else vtrace_logp)
        vs, pg_advantages = vtrace(
            behaviour_logp, target_logp if cfg.vtrace else behaviour_logp,
            to_numpy(batch["rewards"]), to_numpy(values),
            to_numpy(all_values[index + 1]), to_numpy(batch["terminateds"]),
            to_numpy(batch["chunk_ends"]), cfg.gamma, cfg.vtrace_clip_rho_threshold,
            cfg.vtrace_clip_pg_rho_threshold)
        return (values, dist, logp, self.to_device(vs, torch.float32),
                self.to_device(pg_advantages, torch.float32))

    def actor_critic_loss(self, policy_loss: torch.Tensor, values: torch.Tensor, vs: torch.Tensor,
                          dist, **stats: float) -> tuple[torch.Tensor, dict]:
        """`policy_loss` + vf_loss_coeff * value loss (towards `vs`) - entropy_coeff * entropy."""
        cfg = self.config
        vf_loss = 0.5 * (values - vs).pow(2).mean()
        entropy = dist.entropy().mean()
        total = policy_loss + cfg.vf_loss_coeff * vf_loss - cfg.entropy_coeff * entropy
        return total, {"total_loss": total.detach(), "policy_loss": policy_loss.detach(),
                       "vf_loss": vf_loss.detach(), "entropy": entropy.detach(), **stats}
