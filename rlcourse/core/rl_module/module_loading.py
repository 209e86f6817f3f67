"""What an Algorithm checkpoint says its RLModule is (config, spaces, weights, frozen connectors),
and the env's greedy actions from a module: acting needs no Ray, runners or Learner."""

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import torch

from rlcourse.connectors.env_to_module.env_to_module_pipeline import (
    EnvToModulePipeline,
    build_env_to_module_pipeline,
)
from rlcourse.core.rl_module.numpy_mlp import to_env_actions
from rlcourse.env.registry import env_name, is_registered, probe_spaces
from rlcourse.utils.checkpoint_contents import config_from_json
from rlcourse.utils.checkpoints import CheckpointError, read_checkpoint

if TYPE_CHECKING:
    from rlcourse.algorithms.algorithm_config import AlgorithmConfig
    from rlcourse.core.rl_module.rl_module import RLModule


def frozen_env_to_module(config: "AlgorithmConfig", observation_space: Any, action_space: Any,
                         state: list | None) -> EnvToModulePipeline | None:
    """The config's env-to-module connectors with the checkpoint's statistics, frozen (or None)."""
    if config.env_to_module_connector is None:
        return None
    pipeline = build_env_to_module_pipeline(config, observation_space, action_space)
    pipeline.update_stats = False
    pipeline.set_state(state)
    return pipeline


class SavedModule(NamedTuple):
    """A checkpoint's module as data; `source` names the file in errors."""

    config: "AlgorithmConfig"
    observation_space: Any
    action_space: Any
    weights: dict[str, torch.Tensor]
    connectors: EnvToModulePipeline | None
    source: str


def read_saved_module(path: str | os.PathLike, allowed: Iterable[Any] = ()) -> SavedModule:
    """The checkpoint's module, its config read with the allowlist `allowed` (your classes and env
    creators it names; never its callbacks class)."""
    state, tensors = read_checkpoint(path)
    source = f"The checkpoint {path}"
    if "config" not in state or "module" not in tensors.get("learner.pt", {}):
        raise CheckpointError(f"{source} has no config or no learner.pt module weights: it is not "
                              "an Algorithm checkpoint. Pass the directory algo.save_to_path() wrote.")
    config = config_from_json(state["config"], source, allowed, skip={"callbacks_class"},
                              is_registered=is_registered)
    observation_space, action_space = probe_spaces(config.get_env_creator(), config.env_config,
                                                   env_name(config.env))
    connectors = frozen_env_to_module(config, observation_space, action_space,
                                      state.get("algorithm", {}).get("env_to_module_state"))
    if connectors is not None:  # the module was built for what the connectors return
        observation_space = connectors.observation_space
    return SavedModule(config, observation_space, action_space, tensors["learner.pt"]["module"],
                       connectors, source)


def env_observation_space(module: "RLModule") -> Any:
    """The space of the raw env observations `greedy_env_actions` takes (before any connectors)."""
    connectors = module.env_to_module
    return module.observation_space if connectors is None else connectors.input_observation_space


def greedy_env_actions(module: "RLModule", observations: Any) -> np.ndarray:
    """The env's greedy actions for a batch of raw env observations (through frozen connectors)."""
    if module.env_to_module is not None:
        observations = module.env_to_module(observations)
    with torch.no_grad():
        out = module.forward_inference({"obs": torch.as_tensor(np.asarray(observations))})
        actions = module.greedy_actions(out["action_dist_inputs"]).numpy()
    return to_env_actions(actions, module.action_space)
