"""The runners' recurrent network: the default LSTM module (lstm_module.py) forward in NumPy, one
step for all sub-envs at a time, keeping torch out of runners as NumpyMLP does (tests/test_lstm.py
checks it against torch's nn.LSTM)."""

import numpy as np

from rlcourse.core.rl_module.default_model_config import SpaceInfo, lstm_settings
from rlcourse.core.rl_module.numpy_mlp import NUMPY_ACTIVATIONS, layer, linear_layers


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (np.tanh(0.5 * x) + 1.0)  # = 1 / (1 + exp(-x)), without overflow


def lstm_cell(x: np.ndarray, h: np.ndarray, c: np.ndarray, weight: np.ndarray, bias: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """One step of torch's nn.LSTM for a batch: gates i, f, g, o (torch's order) from [x, h];
    c' = f * c + i * g, h' = o * tanh(c'). `weight` is [W_ih, W_hh] transposed, `bias` b_ih + b_hh.
    einsum, not `@`: a product this size has OpenBLAS start its threads, whose spinning costs many
    times the product itself when the cores are busy (einsum stays in this thread)."""
    xh = np.concatenate([x, h], axis=1)
    i, f, g, o = np.split(np.einsum("bi,ij->bj", xh, weight) + bias, 4, axis=1)
    c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
    return _sigmoid(o) * np.tanh(c), c


class NumpyLSTM:
    """Encoder MLP, one LSTM step, the linear policy head; a sub-env's state is h and c stacked,
    [2, lstm_cell_size] (RLlib: a dict {"h", "c"})."""

    is_stateful = True

    def __init__(self, info: SpaceInfo, model_config: dict):
        self.info = info
        self.activation = NUMPY_ACTIVATIONS[model_config["fcnet_activation"]]
        self.cell_size = int(lstm_settings(model_config)["lstm_cell_size"])

    def get_initial_state(self) -> np.ndarray:
        return np.zeros((2, self.cell_size), dtype=np.float32)

    def set_state(self, state: dict[str, np.ndarray]) -> None:
        """Take the torch module's `encoder.*`, `lstm.*_l0` and `pi.*` arrays."""
        self.encoder = [layer(state, name) for name in linear_layers(state, "encoder")]
        self.weight = np.ascontiguousarray(np.concatenate(
            [state["lstm.weight_ih_l0"], state["lstm.weight_hh_l0"]], axis=1).T, dtype=np.float32)
        self.bias = np.asarray(state["lstm.bias_ih_l0"] + state["lstm.bias_hh_l0"], np.float32)
        self.pi = layer(state, "pi.0")  # one linear layer (lstm_module.py)

    def step(self, obs: np.ndarray, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(action_dist_inputs, next state) for a batch of observations and states [N, 2, cell]."""
        x = np.asarray(obs, dtype=np.float32).reshape(len(obs), -1)
        for w, b in self.encoder:  # each encoder layer ends with its activation
            x = self.activation(x @ w + b)
        h, c = lstm_cell(x, state[:, 0], state[:, 1], self.weight, self.bias)
        return h @ self.pi[0] + self.pi[1], np.stack([h, c], axis=1)
