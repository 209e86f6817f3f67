"""DefaultLSTMModule: RLlib's `use_lstm` model, the MLP encoder, an LSTM of `lstm_cell_size` units
and linear policy and value heads on its output. Learners run it over zero-padded [B, T] sequences;
runners step its NumPy twin (numpy_lstm.py)."""

import numpy as np
import torch
from torch import nn

from rlcourse.core import STATE_IN, STATE_OUT
from rlcourse.core.rl_module.default_model_config import lstm_settings, space_info
from rlcourse.core.rl_module.rl_module import DefaultActorCriticModule, mlp


class DefaultLSTMModule(DefaultActorCriticModule):
    """The encoder, `lstm` and the `pi` / `vf` heads; its state is h and c stacked: [2, cell]."""

    inference_prefixes = ("encoder.", "lstm.", "pi.")

    def setup(self) -> None:
        self.info = space_info(self.observation_space, self.action_space)
        settings = lstm_settings(self.model_config)
        hiddens, act = list(settings["fcnet_hiddens"]), settings["fcnet_activation"]
        self.cell_size = int(settings["lstm_cell_size"])
        self.vf_share_layers = True  # pi and vf both read the LSTM's output
        self.encoder = mlp([self.info.obs_dim, *hiddens], act, encoder=True)
        self.lstm = nn.LSTM(hiddens[-1] if hiddens else self.info.obs_dim, self.cell_size,
                            batch_first=True)
        self.pi = mlp([self.cell_size, self.info.dist_inputs_dim], act)
        self.vf = mlp([self.cell_size, 1], act)
        nn.init.normal_(self.pi[-1].weight, std=0.01)  # a near-uniform first policy, as the MLP's
        nn.init.zeros_(self.pi[-1].bias)

    def get_initial_state(self) -> np.ndarray:
        return np.zeros((2, self.cell_size), dtype=np.float32)

    def _forward(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Sequences batch["obs"] [B, T, ...] from batch[STATE_IN] [B, 2, cell]: per step, the
        policy's inputs and the LSTM's outputs (`embeddings`); STATE_OUT after step T."""
        if STATE_IN not in batch:
            raise ValueError("DefaultLSTMModule is stateful (use_lstm): pass sequences batch['obs'] "
                             f"[B, T, ...] with batch[{STATE_IN!r}] [B, 2, lstm_cell_size], e.g. "
                             "module.get_initial_state() repeated B times.")
        obs = batch["obs"]
        b, t = obs.shape[:2]
        x = self.encoder(obs.float().reshape(b * t, -1)).reshape(b, t, -1)
        state = batch[STATE_IN].float()
        # On CUDA, cuDNN wants the weights in one block: a restored learner state can leave them
        # apart (torch warns, and copies them on every call). A no-op on the CPU.
        self.lstm.flatten_parameters()
        out, (h, c) = self.lstm(x, (state[:, 0][None].contiguous(), state[:, 1][None].contiguous()))
        return {"action_dist_inputs": self.pi(out), "embeddings": out,
                STATE_OUT: torch.stack([h[0], c[0]], dim=1)}

    def compute_values(self, batch: dict[str, torch.Tensor],
                       embeddings: torch.Tensor | None = None) -> torch.Tensor:
        """V per step of each sequence, [B, T]."""
        if embeddings is None:
            embeddings = self._forward(batch)["embeddings"]
        return self.vf(embeddings).squeeze(-1)
