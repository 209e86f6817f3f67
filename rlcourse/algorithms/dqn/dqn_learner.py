"""DQNLearner: one gradient step on a replay batch, and the target network's updates.

The loss, for a batch of n-step transitions (s, a, R, s', done, n) with importance weights w:

    a*     = argmax_a' Q_online(s', a')      (double_q; plain DQN: argmax of Q_target)
    y      = R + gamma^n * (1 - done) * Q_target(s', a*)
    td     = Q_online(s, a) - y
    loss   = mean(w * huber(td))

`td` goes back to the replay buffer as the rows' new priorities. The target network moves towards
the online one by `tau` every `target_network_update_freq` env steps sampled (as RLlib counts).
"""

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from rlcourse.core.learner.learner import Learner, one_torch_thread
from rlcourse.utils.state_values import check_counter

BATCH_KEYS = ("obs", "actions", "rewards", "new_obs", "terminateds", "n_step", "weights")


class DQNLearner(Learner):
    """Learns from replay batches (`update_from_batch`), not from fresh episodes."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.last_target_update_ts = 0  # env steps sampled at the last target update

    def compute_loss(self, batch: dict[str, torch.Tensor]
                     ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The weighted Huber loss; `td_error` (one per row) is returned for the priorities."""
        cfg = self.config
        q = self.module.compute_q_values(batch["obs"])
        q_taken = q.gather(1, batch["actions"].long()[:, None]).squeeze(1)
        with torch.no_grad():
            q_next_target = self.module.compute_target_q_values(batch["new_obs"])
            if cfg.double_q:  # the online net picks the action, the target net values it
                best = self.module.compute_q_values(batch["new_obs"]).argmax(dim=1)
            else:
                best = q_next_target.argmax(dim=1)
            q_next = q_next_target.gather(1, best[:, None]).squeeze(1)
            not_done = 1.0 - batch["terminateds"].float()
            target = batch["rewards"] + cfg.gamma ** batch["n_step"].float() * not_done * q_next
        td_error = q_taken - target
        huber = torch.nn.functional.huber_loss(q_taken, target, reduction="none", delta=1.0)
        loss = (batch["weights"] * huber).mean()
        return loss, {"qf_loss": loss.detach(), "qf_mean": q_taken.detach().mean(),
                      "td_error_mean": td_error.detach().abs().mean(),
                      "td_error": td_error.detach()}

    def update_from_batch(self, batch: dict[str, np.ndarray], num_env_steps_sampled_lifetime: int
                          ) -> dict[str, Any]:
        """One step on `batch`; then the target update, if due. Returns loss statistics and the
        per-row `td_error` (NumPy) for the buffer's priorities."""
        # Copies on the learner's device (Ray's arrays are read-only).
        tensors = {key: torch.tensor(batch[key], device=self.device) for key in BATCH_KEYS}
        with one_torch_thread():
            loss, metrics = self.compute_loss(tensors)
            td_error = metrics.pop("td_error")
            self.optimizer.zero_grad(set_to_none=False)
            loss.backward()
            metrics["gradients_default_optimizer_global_norm"] = self.apply_gradients(len(td_error))
        self.num_updates += 1
        if (num_env_steps_sampled_lifetime - self.last_target_update_ts
                >= self.config.target_network_update_freq):
            self.module.update_target(self.config.tau)
            self.last_target_update_ts = num_env_steps_sampled_lifetime
        results: dict[str, Any] = {name: float(value) for name, value in metrics.items()}
        results.update(td_error=td_error.cpu().numpy(), num_env_steps_trained=len(td_error),
                       default_optimizer_learning_rate=self.optimizer.param_groups[0]["lr"],
                       last_target_update_ts=self.last_target_update_ts)
        return results

    def get_state(self) -> dict[str, Any]:
        return {**super().get_state(), "last_target_update_ts": self.last_target_update_ts}

    def check_state(self, state: dict[str, Any], name: Callable[[str], str] = str) -> None:
        super().check_state(state, name)
        check_counter(state["last_target_update_ts"], name("last_target_update_ts"))

    def set_state(self, state: dict[str, Any]) -> None:
        super().set_state(state)
        self.last_target_update_ts = state["last_target_update_ts"]
