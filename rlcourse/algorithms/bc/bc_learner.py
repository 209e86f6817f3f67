"""BCLearner: the negative log-likelihood of the recorded actions under the policy (Pomerleau 1991;
RLlib's BC is MARWIL with beta=0, whose loss is this one)."""

from typing import Any

import numpy as np
import torch

from rlcourse.core.learner.learner import Learner


class BCLearner(Learner):
    """One gradient step per batch of recorded rows (`OfflinePreLearner`'s obs and actions)."""

    def compute_loss(self, batch: dict[str, torch.Tensor]
                     ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        out = self.module.forward_train(batch)
        logp = self.module.get_action_dist(out["action_dist_inputs"]).log_prob(batch["actions"])
        policy_loss = -logp.mean()
        return policy_loss, {"policy_loss": policy_loss.detach()}

    def update_from_batch(self, batch: dict[str, np.ndarray]) -> dict[str, Any]:
        """One step on `batch`; returns the loss statistics and the rows trained on."""
        # Copies on the learner's device (arrays that came through Ray are read-only).
        tensors = {key: torch.tensor(value, device=self.device) for key, value in batch.items()}
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
