"""RLModuleSpec: RLlib's description of an RLModule to build (class, model_config, spaces); in a
config, what `rl_module(rl_module_class=..., model_config=...)` says. Torch-free for runners."""

from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from rlcourse.core.rl_module.default_model_config import DEFAULT_MODEL_CONFIG
from rlcourse.utils.validation import ConfigError


@dataclass
class RLModuleSpec:
    """Which RLModule class (None: the algorithm's default) with which `model_config`."""

    module_class: type | None = None
    observation_space: gym.Space | None = None
    action_space: gym.Space | None = None
    model_config: dict | None = None

    def build(self) -> Any:
        """The module for these spaces (default class: the actor-critic MLP, or LSTM)."""
        if self.observation_space is None or self.action_space is None:
            raise ValueError("RLModuleSpec.build() needs observation_space and action_space: "
                             "pass them to RLModuleSpec(...), e.g. env.observation_space.")
        model_config = {**DEFAULT_MODEL_CONFIG, **(self.model_config or {})}
        module_class = self.module_class or default_actor_critic_class(model_config)
        return module_class(self.observation_space, self.action_space, model_config)


def default_actor_critic_class(model_config: dict) -> type:
    """PPO's and IMPALA's default module: the MLP, or the LSTM for use_lstm (imported only when
    chosen: both import torch)."""
    if model_config.get("use_lstm"):
        from rlcourse.core.rl_module.lstm_module import DefaultLSTMModule
        return DefaultLSTMModule
    from rlcourse.core.rl_module.rl_module import DefaultActorCriticModule
    return DefaultActorCriticModule


def settings_from_spec(spec: Any, also_given: bool = False) -> dict[str, Any]:
    """The `rl_module()` settings a spec stands for: rl_module_class, and model_config if given
    (`also_given`: model_config or rl_module_class were passed beside it)."""
    if also_given:
        raise ConfigError("rl_module_spec", spec, "pass either an RLModuleSpec or model_config / "
                          "rl_module_class, not both.", "rl_module")
    if not isinstance(spec, RLModuleSpec):
        raise ConfigError("rl_module_spec", spec, "pass an RLModuleSpec(module_class=..., "
                          "model_config=...) from rlcourse.core.rl_module.rl_module_spec.", "rl_module")
    if spec.observation_space is not None or spec.action_space is not None:
        raise ConfigError("rl_module_spec", spec, "an algorithm takes the spaces from its env: leave "
                          "observation_space and action_space out (they are for "
                          "RLModuleSpec.build()).", "rl_module")
    settings: dict[str, Any] = {"rl_module_class": spec.module_class}
    if spec.model_config is not None:
        settings["model_config"] = spec.model_config
    return settings
