"""What the default model is built from: its settings and the facts it needs about the spaces.

Torch-free on purpose: the config, validation, the Algorithm and the NumPy runner module all need
these, and none of them may import torch (runner processes stay light). The torch layers are in
`rl_module.py`, the NumPy forward pass in `numpy_mlp.py`; both are sized by `space_info`.
"""

from dataclasses import dataclass

import gymnasium as gym
import numpy as np

# RLlib 2.60's DefaultModelConfig: two hidden layers of 256, tanh, one encoder shared by the policy
# and value heads (IMPALA's default; PPOConfig turns the sharing off, as RLlib's does). The course's
# small envs learn faster in wall time on [64, 64]: the lessons and tuned_examples/ set that.
DEFAULT_MODEL_CONFIG = {"fcnet_hiddens": [256, 256], "fcnet_activation": "tanh",
                        "vf_share_layers": True}
ACTIVATIONS = ("tanh", "relu", "linear")  # values of model_config["fcnet_activation"]


class DefaultModelConfig(dict):
    """RLlib's spelling of the default model's settings, as keywords:
    `rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[32], fcnet_activation="relu"))` is that
    dict, checked at build time like any model_config. Settings it leaves out keep the defaults;
    RLlib's model has settings this one does not (conv_filters, use_lstm, ...), and those are
    refused."""

    def __init__(self, **settings: object) -> None:
        super().__init__(settings)


@dataclass(frozen=True)
class SpaceInfo:
    """What the default module needs to know about the spaces: input size and action head."""

    obs_dim: int
    obs_one_hot: bool  # Discrete observations are fed one-hot
    discrete_actions: bool
    action_dim: int  # number of actions (Discrete) or action vector size (Box)
    obs_start: int = 0  # Discrete(n, start=k) observations are k..k+n-1: one-hot index obs - k

    @property
    def dist_inputs_dim(self) -> int:
        """Logits per action (Discrete), or a mean and a log-std per action dimension (Box)."""
        return self.action_dim if self.discrete_actions else 2 * self.action_dim


def space_info(observation_space: gym.Space, action_space: gym.Space) -> SpaceInfo:
    """Check that the default MLP supports these spaces and size its layers.

    Modules always act with action indices 0..n-1; for a `Discrete(n, start=k)` action space the
    EnvRunner (and `Algorithm.compute_actions`) add `k` (numpy_mlp.py's `env_action_offset`)."""
    obs_start = 0
    if isinstance(observation_space, gym.spaces.Box):
        obs_dim, one_hot = int(np.prod(observation_space.shape)), False
    elif isinstance(observation_space, gym.spaces.Discrete):
        obs_dim, one_hot = int(observation_space.n), True
        obs_start = int(observation_space.start)
    else:
        raise ValueError(
            f"Unsupported observation_space {observation_space}: the default MLP takes Box or "
            "Discrete observations. Flatten it with gymnasium.wrappers.FlattenObservation in your "
            "env creator, or pass your own module with config.rl_module(rl_module_class=...).")
    if isinstance(action_space, gym.spaces.Discrete):
        return SpaceInfo(obs_dim, one_hot, True, int(action_space.n), obs_start)
    if isinstance(action_space, gym.spaces.Box) and len(action_space.shape) == 1:
        return SpaceInfo(obs_dim, one_hot, False, int(action_space.shape[0]), obs_start)
    raise ValueError(
        f"Unsupported action_space {action_space}: the default MLP acts in Discrete or 1-D Box "
        "spaces. Wrap the env to use one of those, or pass your own module with "
        "config.rl_module(rl_module_class=...).")
