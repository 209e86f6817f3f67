"""A trained RLModule from an Algorithm checkpoint alone, and the env's greedy actions from it.

Acting needs only the network: no Ray, no EnvRunners, no Learner and no optimizer. The checkpoint's
config (read with the checkpoint allowlist of `checkpoint_contents.py`: no class is imported because
the file names it) says which module class and model_config built the network; one env built here
gives the spaces. Then the saved weights are loaded into a fresh module.
"""

import os
from collections.abc import Iterable
from typing import Any

import numpy as np
import torch

from rlcourse.core.rl_module.default_model_config import to_env_actions
from rlcourse.core.rl_module.rl_module import RLModule, build_module
from rlcourse.env.registry import env_name, probe_spaces
from rlcourse.utils.checkpoint_contents import config_from_json
from rlcourse.utils.checkpoints import CheckpointError, read_checkpoint


def module_from_checkpoint(path: str | os.PathLike, allowed: Iterable[Any] = ()) -> RLModule:
    """The checkpoint's module with its trained weights, in eval mode. `allowed`: your own classes
    and env creators the checkpoint names (a custom RLModule class, an env class); its callbacks
    class is not needed, so never imported."""
    state, tensors = read_checkpoint(path)
    source = f"The checkpoint {path}"
    if "config" not in state or "module" not in tensors.get("learner.pt", {}):
        raise CheckpointError(f"{source} has no config or no learner.pt module weights: it is not "
                              "an Algorithm checkpoint. Pass the directory algo.save_to_path() wrote.")
    # The network needs no callbacks: a checkpoint trained with yours loads without them.
    config = config_from_json(state["config"], source, allowed, skip={"callbacks_class"})
    observation_space, action_space = probe_spaces(config.get_env_creator(), config.env_config,
                                                   env_name(config.env))
    module = build_module(config, observation_space, action_space)
    weights = tensors["learner.pt"]["module"]
    try:
        module.load_state_dict(weights, strict=True)
    except RuntimeError as e:
        raise CheckpointError(f"{source}: its weights do not fit the network its config builds "
                              f"({e}). The file was edited or is from another rlcourse.") from None
    return module.eval()


def greedy_env_actions(module: RLModule, observations: np.ndarray) -> np.ndarray:
    """The env's actions for a batch of observations: the most likely action of the module's
    `forward_inference` output (the mean for Box actions), as the env takes it (`to_env_actions`)."""
    with torch.no_grad():
        out = module.forward_inference({"obs": torch.as_tensor(np.asarray(observations))})
        actions = module.greedy_actions(out["action_dist_inputs"]).numpy()
    return to_env_actions(actions, module.action_space)
