"""MARWILLearner: the recorded actions' log-likelihood, each weighted by exp(beta * A / c), plus a
value loss (RLlib's MARWILTorchLearner). A = R - V(s), with R the discounted return to the end of the
row's chunk, bootstrapped from V there (RLlib's GAE with lambda 1); c^2 is a moving average of A^2.
With beta 0 every weight is 1 and there is no value loss: the loss is BC's, -mean log pi(a|s)."""

from typing import Any

import numpy as np
import torch

from rlcourse.algorithms.ppo.ppo_learner import explained_variance
from rlcourse.core.learner.learner import Learner
from rlcourse.utils.postprocessing import compute_gae
from rlcourse.utils.state_values import check_number


def advantage_weights(advantages: torch.Tensor, moving_avg_sqd_adv_norm: torch.Tensor,
                      beta: float) -> torch.Tensor:
    """exp(beta * A / c), c the square root of the moving average of A^2; no gradient flows
    through the weights (they scale the imitation, they are not learned)."""
    return torch.exp(beta * advantages / (1e-8 + moving_avg_sqd_adv_norm.sqrt())).detach()


class MARWILLearner(Learner):
    """One gradient step per batch of recorded rows (`OfflinePreLearner`'s, or with beta > 0
    `MARWILOfflinePreLearner`'s, which adds rewards and episode boundaries)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.moving_avg_sqd_adv_norm = self.to_device(
            self.config.moving_average_sqd_adv_norm_start, torch.float32)

    def value_targets(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Discounted returns to each chunk's end, bootstrapped from V(new_obs) where a chunk is cut
        rather than terminated, with the value network as it is now."""
        with torch.no_grad():
            values = self.module.compute_values({"obs": torch.cat([batch["obs"],
                                                                   batch["new_obs"]])})
        values = values.cpu().numpy()
        n = len(batch["obs"])
        _, targets = compute_gae(batch["rewards"].cpu().numpy(), values[:n], values[n:],
                                 batch["terminateds"].cpu().numpy(),
                                 batch["chunk_ends"].cpu().numpy(), self.config.gamma, 1.0)
        return self.to_device(targets, torch.float32)

    def compute_loss(self, batch: dict[str, torch.Tensor]
                     ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        cfg = self.config
        out = self.module.forward_train(batch)
        logp = self.module.get_action_dist(out["action_dist_inputs"]).log_prob(batch["actions"])
        if cfg.beta == 0.0:  # BC: imitate every recorded action alike
            policy_loss = -logp.mean()
            return policy_loss, {"policy_loss": policy_loss.detach()}
        values = self.module.compute_values(batch, out.get("embeddings"))
        advantages = batch["value_targets"] - values
        sqd_adv_mean = advantages.pow(2).mean()
        self.moving_avg_sqd_adv_norm = self.moving_avg_sqd_adv_norm + (
            cfg.moving_average_sqd_adv_norm_update_rate
            * (sqd_adv_mean.detach() - self.moving_avg_sqd_adv_norm))
        weights = advantage_weights(advantages, self.moving_avg_sqd_adv_norm, cfg.beta)
        policy_loss = -(weights * logp).mean()
        vf_loss = 0.5 * sqd_adv_mean
        total = policy_loss + cfg.vf_coeff * vf_loss
        return total, {"total_loss": total.detach(), "policy_loss": policy_loss.detach(),
                       "vf_loss": vf_loss.detach(),
                       "vf_explained_var": explained_variance(batch["value_targets"],
                                                              values.detach()),
                       "moving_avg_sqd_adv_norm": self.moving_avg_sqd_adv_norm}

    def update_from_batch(self, batch: dict[str, np.ndarray]) -> dict[str, Any]:
        """One step on `batch`; returns the loss statistics and the rows trained on."""
        # Copies on the learner's device (arrays that came through Ray are read-only).
        tensors = {key: torch.tensor(value, device=self.device) for key, value in batch.items()}
        if self.config.beta > 0:
            tensors["value_targets"] = self.value_targets(tensors)
        loss, metrics = self.compute_loss(tensors)
        self.optimizer.zero_grad(set_to_none=False)
        loss.backward()
        metrics["gradients_default_optimizer_global_norm"] = self.apply_gradients(
            len(batch["actions"]))
        self.num_updates += 1
        results: dict[str, Any] = {name: float(value) for name, value in metrics.items()}
        results.update(num_env_steps_trained=len(batch["actions"]),
                       default_optimizer_learning_rate=self.optimizer.param_groups[0]["lr"])
        return results

    def get_state(self):
        return {**super().get_state(), "moving_avg_sqd_adv_norm": float(
            self.moving_avg_sqd_adv_norm)}

    def check_state(self, state, name=str):
        super().check_state(state, name)
        check_number(state["moving_avg_sqd_adv_norm"], name("moving_avg_sqd_adv_norm"), low=0)

    def set_state(self, state):
        super().set_state(state)
        self.moving_avg_sqd_adv_norm = self.to_device(state["moving_avg_sqd_adv_norm"],
                                                      torch.float32)
