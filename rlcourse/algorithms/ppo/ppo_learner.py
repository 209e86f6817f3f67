"""PPOLearner: GAE targets for the batch, and the clipped-surrogate loss for each minibatch."""

from typing import Any

import numpy as np
import torch

from rlcourse.connectors.common.add_time_dim_to_batch_and_zero_pad import add_time_dim
from rlcourse.core import LOSS_MASK, STATE_IN
from rlcourse.core.learner.learner import Learner, forward_all_obs
from rlcourse.core.rl_module.default_model_config import lstm_settings
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
        """Flatten the chunks, compute values (bootstrap observations too), GAE, normalize. For a
        stateful module the steps become zero-padded sequences with a LOSS_MASK
        (add_time_dim_to_batch_and_zero_pad.py); GAE runs on the real steps only."""
        flat = flatten_episodes(episodes)
        index = flat["obs_index"]
        # On the learner's device once, for the values and (without sequences) the batch.
        all_obs = {k: self.to_device(v) for k, v in self.all_obs_batch(flat).items()}
        with torch.no_grad():
            all_values = forward_all_obs(self.module, all_obs, dist_inputs=False)["values"]
        all_values = all_values.cpu().numpy()
        advantages, value_targets = compute_gae(
            flat["rewards"], all_values[index], all_values[index + 1], flat["terminateds"],
            flat["chunk_ends"], self.config.gamma, self.config.lambda_)
        # Standardize advantages over the whole batch; across all learners when data-parallel.
        total, total_sq, count = self.all_reduce_sum(
            np.array([advantages.sum(), (advantages**2).sum(), len(advantages)], np.float64))
        mean = total / count
        std = np.sqrt(max(total_sq / count - mean**2, 0.0))
        flat["advantages"] = ((advantages - mean) / (std + 1e-8)).astype(np.float32)
        flat["value_targets"] = value_targets.astype(np.float32)
        columns = ("actions", "action_logp", "advantages", "value_targets")
        if STATE_IN in flat:
            flat["obs"] = flat["all_obs"][index]
            return add_time_dim(flat, [len(ep) for ep in episodes],
                                lstm_settings(self.config.model_config)["max_seq_len"],
                                ("obs", *columns))
        return {"obs": all_obs["all_obs"][self.to_device(index)], **{k: flat[k] for k in columns}}

    def compute_loss(self, batch: dict[str, torch.Tensor]):
        cfg = self.config
        out = self.module.forward_train(batch)
        # Sequences: only the real steps count (padding is masked out); flat batches: every step.
        mask = batch.get(LOSS_MASK)

        def steps(values: torch.Tensor) -> torch.Tensor:
            return values if mask is None else values[mask]

        dist = self.module.get_action_dist(steps(out["action_dist_inputs"]))
        logp = dist.log_prob(steps(batch["actions"]))
        log_ratio = logp - steps(batch["action_logp"])
        ratio = log_ratio.exp()
        adv = steps(batch["advantages"])
        surrogate = torch.min(ratio * adv, ratio.clamp(1 - cfg.clip_param, 1 + cfg.clip_param) * adv)
        policy_loss = -surrogate.mean()
        values = steps(self.module.compute_values(batch, out.get("embeddings")))
        value_targets = steps(batch["value_targets"])
        vf_loss_unclipped = (values - value_targets).pow(2)
        vf_loss = vf_loss_unclipped.clamp(max=cfg.vf_clip_param).mean()
        entropy = dist.entropy().mean()
        total = policy_loss + cfg.vf_loss_coeff * vf_loss - cfg.entropy_coeff * entropy
        # KL(old || new) estimated from samples of the old policy (Schulman's k3 estimator: the
        # same mean and gradient as RLlib's exact prev_dist.kl(curr_dist), noisier, and needing
        # no old distribution); RLlib reports it as 0 and leaves curr_kl_coeff out when it is off.
        mean_kl, kl_results = torch.zeros(()), {}
        if cfg.use_kl_loss:
            mean_kl = ((ratio - 1) - log_ratio).mean()
            total = total + self.curr_kl_coeff * mean_kl
            kl_results = {"curr_kl_coeff": self.curr_kl_coeff}
        return total, {"total_loss": total.detach(), "policy_loss": policy_loss.detach(),
                       "vf_loss": vf_loss.detach(),
                       "vf_loss_unclipped": vf_loss_unclipped.mean().detach(),
                       "vf_explained_var": explained_variance(value_targets, values.detach()),
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
        if self.config.use_kl_loss:
            self.curr_kl_coeff = adapted_kl_coeff(self, results["mean_kl_loss"])
        return results


def adapted_kl_coeff(learner: Any, mean_kl: float) -> float:
    """The KL penalty's coefficient moved towards kl_target, as RLlib does (PPO's and APPO's): the
    KL is averaged over learners so that every learner keeps the same coefficient."""
    kl = learner.all_reduce_sum(np.array([mean_kl]))[0] / learner.world_size
    if kl > 2.0 * learner.config.kl_target:
        return learner.curr_kl_coeff * 1.5
    if kl < 0.5 * learner.config.kl_target:
        return learner.curr_kl_coeff * 0.5
    return learner.curr_kl_coeff
