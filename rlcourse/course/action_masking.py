"""ActionMaskingModule: PPO's default actor-critic that only ever plays legal ConnectFour columns.

RLlib's action-masking example (rllib/examples/rl_modules/classes/action_masking_rlm.py) gets the
mask from a Dict observation {"action_mask", "observations"}. A ConnectFour board already shows it:
a column is legal while its top cell, the first `cols` entries of the flat observation (row 0 on
top), is empty. The logits of full columns are pushed to a large negative number, so sampling,
greedy actions, log-probabilities and the entropy only ever see legal moves: the policy cannot lose
by playing into a full column, and no training games are spent learning not to.
"""

import numpy as np
import torch

from rlcourse.core.rl_module.numpy_mlp import ActionHead, InferenceModule, NumpyMLP, default_action_head
from rlcourse.core.rl_module.rl_module import DefaultActorCriticModule

MASKED_LOGIT = -1e9  # exp() of it is 0; finite, so 0 * logit stays 0 in the entropy


class ActionMaskingModule(DefaultActorCriticModule):
    """The default MLP actor-critic for a board whose action n is legal while observation n is 0."""

    def _forward(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        out = super()._forward(batch)
        logits = out["action_dist_inputs"]
        full = self._obs(batch)[:, :logits.shape[-1]] != 0
        return {**out, "action_dist_inputs": logits.masked_fill(full, MASKED_LOGIT)}

    def get_inference_module(self, head: ActionHead | None = None, seed: int | None = None
                             ) -> InferenceModule:
        """Runners act in NumPy, as with the default module (fast on small batches)."""
        return InferenceModule(NumpyMaskedMLP(self.info, self.model_config),
                               head or default_action_head(self.action_space), seed)


class NumpyMaskedMLP(NumpyMLP):
    """The runners' network of `ActionMaskingModule`: the same mask on the NumPy MLP."""

    def action_dist_inputs(self, obs: np.ndarray) -> np.ndarray:
        logits = super().action_dist_inputs(obs)
        full = np.asarray(obs).reshape(len(logits), -1)[:, :logits.shape[1]] != 0
        logits[full] = MASKED_LOGIT
        return logits
