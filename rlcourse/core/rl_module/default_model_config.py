"""The default model's settings and what it needs to know about the spaces; torch-free, since the
config, the Algorithm and the runners' NumPy module (numpy_mlp.py) read them too."""

from dataclasses import dataclass

import gymnasium as gym
import numpy as np

# RLlib 2.60's defaults (PPOConfig turns the sharing off, as RLlib's does). The course's small envs
# learn faster in wall time on [64, 64]: the lessons and tuned_examples/ set that.
DEFAULT_MODEL_CONFIG = {"fcnet_hiddens": [256, 256], "fcnet_activation": "tanh",
                        "vf_share_layers": True}
# RLlib's recurrent settings and defaults: `use_lstm` puts an LSTM of `lstm_cell_size` units after the
# MLP encoder; the learner trains on sequences of `max_seq_len` steps (lstm_module.py).
LSTM_DEFAULTS = {"use_lstm": False, "lstm_cell_size": 256, "max_seq_len": 20}


def lstm_settings(model_config: dict) -> dict:
    """`model_config` with RLlib's defaults for the recurrent settings it leaves out."""
    return {**LSTM_DEFAULTS, **model_config}

ACTIVATIONS = ("tanh", "relu", "linear")  # values of model_config["fcnet_activation"]
# Image observations' settings (cnn_encoder.py), RLlib's names; read only when given.
CONV_DEFAULTS = {"conv_filters": None, "conv_activation": "relu"}


class DefaultModelConfig(dict):
    """RLlib's spelling of a model_config, as keywords: `DefaultModelConfig(fcnet_hiddens=[32])`.
    RLlib's settings this model lacks (use_attention, lstm_use_prev_action, ...) are refused at
    build time."""

    def __init__(self, **settings: object) -> None:
        super().__init__(settings)


# The config line that makes a non-Box observation something the default module takes, as RLlib's.
FLATTEN_FIX = ("config.env_runners(env_to_module_connector=lambda env: FlattenObservations()), "
               "with `from rlcourse.connectors.env_to_module import FlattenObservations`")


@dataclass(frozen=True)
class SpaceInfo:
    """What the default module needs to know about the spaces: input size and action head."""

    obs_dim: int
    discrete_actions: bool
    action_dim: int  # number of actions (Discrete) or action vector size (Box)
    obs_shape: tuple[int, ...] = ()  # [H, W, C] for images (cnn_encoder.py)

    @property
    def dist_inputs_dim(self) -> int:
        """Logits per action (Discrete), or a mean and a log-std per action dimension (Box)."""
        return self.action_dim if self.discrete_actions else 2 * self.action_dim


def space_info(observation_space: gym.Space, action_space: gym.Space) -> SpaceInfo:
    """Check that the default MLP supports these spaces and size its layers. It takes Box
    observations only, as RLlib's does: the FlattenObservations connector one-hots Discrete ones
    (and flattens Dict and Tuple ones) on the runners. Modules act with indices 0..n-1;
    numpy_mlp.py's `to_env_actions` adds a Discrete action space's `start`."""
    if not isinstance(observation_space, gym.spaces.Box):
        raise ValueError(
            f"Unsupported observation_space {observation_space}: the default module takes Box "
            "observations only, as RLlib's does (this is the env's observation space after any "
            "env-to-module connectors). Have the FlattenObservations connector one-hot Discrete "
            f"and flatten Dict/Tuple observations: {FLATTEN_FIX}. Or pass your own module with "
            "config.rl_module(rl_module_class=...).")
    obs_dim, shape = int(np.prod(observation_space.shape)), tuple(observation_space.shape)
    if isinstance(action_space, gym.spaces.Discrete):
        return SpaceInfo(obs_dim, True, int(action_space.n), shape)
    if isinstance(action_space, gym.spaces.Box) and len(action_space.shape) == 1:
        return SpaceInfo(obs_dim, False, int(action_space.shape[0]), shape)
    raise ValueError(
        f"Unsupported action_space {action_space}: the default MLP acts in Discrete or 1-D Box "
        "spaces. Wrap the env to use one of those, or pass your own module with "
        "config.rl_module(rl_module_class=...).")
