"""The default model's settings and what it needs to know about the spaces (torch-free: configs
and runners read them too)."""

import numbers
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from rlcourse.utils.validation import fail

# RLlib 2.60's defaults (PPOConfig turns the sharing off, as RLlib's does). The course's small envs
# learn faster in wall time on [64, 64]: the lessons and tuned_examples/ set that.
DEFAULT_MODEL_CONFIG = {"fcnet_hiddens": [256, 256], "fcnet_activation": "tanh",
                        "vf_share_layers": True}
# RLlib's recurrent settings and defaults: `use_lstm` puts an LSTM of `lstm_cell_size` units after the
# MLP encoder; the learner trains on sequences of `max_seq_len` steps (lstm_module.py).
LSTM_DEFAULTS = {"use_lstm": False, "lstm_cell_size": 256, "max_seq_len": 20}
ACTIVATIONS = ("tanh", "relu", "linear")  # values of model_config["fcnet_activation"]
# Image observations' settings (cnn_encoder.py), RLlib's names; read only when given.
CONV_DEFAULTS = {"conv_filters": None, "conv_activation": "relu"}


def uses_cnn(obs_shape: tuple[int, ...], model_config: dict) -> bool:
    """Whether cnn_encoder.py has a say: image observations [H, W, C], or conv_filters set (which
    it refuses on vectors). Vector observations skip it."""
    return len(obs_shape) == 3 or bool(model_config.get("conv_filters"))


def lstm_settings(model_config: dict) -> dict:
    """`model_config` with RLlib's defaults for the recurrent settings it leaves out."""
    return {**LSTM_DEFAULTS, **model_config}


def _is_whole(value: Any, minimum: int) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= minimum


def check_model_config(config: Any) -> None:
    """Check an AlgorithmConfig's model_config for the default modules: known keys, layer sizes,
    activation, vf_share_layers, then the recurrent settings."""
    known = {**lstm_settings(DEFAULT_MODEL_CONFIG), **CONV_DEFAULTS}
    if unknown := sorted(set(config.model_config) - set(known)):
        fail(config, "model_config", f"the default model has no settings {unknown}; its settings "
             f"are {sorted(known)}. For other architectures, pass your own rl_module_class.")
    hiddens = config.model_config.get("fcnet_hiddens")
    if not (isinstance(hiddens, list | tuple) and hiddens and all(_is_whole(h, 1) for h in hiddens)):
        fail(config, "model_config", "fcnet_hiddens must be a non-empty list of positive layer "
             "sizes, e.g. [256, 256].")
    if config.model_config.get("fcnet_activation") not in ACTIVATIONS:
        fail(config, "model_config", f"fcnet_activation must be one of {sorted(ACTIVATIONS)}.")
    if not isinstance(config.model_config.get("vf_share_layers", False), bool):
        fail(config, "model_config", "vf_share_layers must be True (policy and value heads share "
             "the hidden layers) or False (two separate networks).")
    check_lstm_settings(config)


def check_lstm_settings(config: Any) -> None:
    """Check an AlgorithmConfig's use_lstm, lstm_cell_size and max_seq_len, and what they need
    of the algorithm and its batches."""
    settings = lstm_settings(config.model_config)
    if not isinstance(settings["use_lstm"], bool):
        fail(config, "model_config", "use_lstm must be True (an LSTM after the encoder) or False.")
    for key in ("lstm_cell_size", "max_seq_len"):
        if not _is_whole(settings[key], 1):
            fail(config, "model_config", f"{key} must be a whole number >= 1 (RLlib's default: "
                 f"{lstm_settings({})[key]}), got {settings[key]!r}.")
    if not settings["use_lstm"]:
        return
    if not config.algo_class.supports_lstm or config.is_multi_agent:
        fail(config, "model_config", "use_lstm=True is not implemented for "
             f"{'multi-agent ' if config.is_multi_agent else ''}{config.algo_class.__name__} in "
             "rlcourse yet; single-agent PPO, IMPALA and APPO support it: PPOConfig().rl_module("
             "model_config={'use_lstm': True, 'vf_share_layers': True}).")
    if settings["vf_share_layers"] is not True:
        fail(config, "model_config", "use_lstm=True needs vf_share_layers=True: the policy and "
             "value heads read one LSTM (as RLlib's StatelessCartPole example sets it).")
    seq = settings["max_seq_len"]
    if seq > config.train_batch_size_per_learner or (config.minibatch_size or seq) < seq:
        fail(config, "model_config", f"max_seq_len={seq} must be at most minibatch_size="
             f"{config.minibatch_size} and train_batch_size_per_learner="
             f"{config.train_batch_size_per_learner}: minibatches are whole sequences. Use a "
             "smaller max_seq_len or larger batches.")


class DefaultModelConfig(dict):
    """RLlib's spelling of a model_config, as keywords: `DefaultModelConfig(fcnet_hiddens=[32])`.
    RLlib's settings this model lacks (use_attention, lstm_use_prev_action, ...) are refused at
    build time."""


@dataclass(frozen=True)
class SpaceInfo:
    """The default module's input size and action head."""

    obs_dim: int
    discrete_actions: bool
    action_dim: int  # number of actions (Discrete) or action vector size (Box)
    obs_shape: tuple[int, ...] = ()  # [H, W, C] for images (cnn_encoder.py)

    @property
    def dist_inputs_dim(self) -> int:
        """Logits per action (Discrete), or a mean and a log-std per action dimension (Box)."""
        return self.action_dim if self.discrete_actions else 2 * self.action_dim


def space_info(observation_space: gym.Space, action_space: gym.Space) -> SpaceInfo:
    """Check that the default MLP takes these spaces (Box observations only, as RLlib's), and
    size its layers. Modules act with indices 0..n-1 (`to_env_actions` adds a Discrete `start`)."""
    if not isinstance(observation_space, gym.spaces.Box):
        raise ValueError(
            f"Unsupported observation_space {observation_space}: the default module takes Box "
            "observations only, as RLlib's does (this is the env's observation space after any "
            "env-to-module connectors). Have the FlattenObservations connector one-hot Discrete "
            "and flatten Dict/Tuple observations: config.env_runners(env_to_module_connector="
            "lambda env: FlattenObservations()), with `from rlcourse.connectors.env_to_module "
            "import FlattenObservations`. Or pass your own module with "
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
