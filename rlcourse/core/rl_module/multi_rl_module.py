"""MultiRLModule: one RLModule per module id, in torch (RLlib's container for multi-agent policies)."""

from typing import TYPE_CHECKING

import numpy as np
import torch

from rlcourse.core.rl_module.multi_rl_module_spec import MultiRLModuleSpec, module_config
from rlcourse.core.rl_module.rl_module import build_module
from rlcourse.env.multi_agent_episode import ModuleID

if TYPE_CHECKING:
    from rlcourse.algorithms.algorithm_config import AlgorithmConfig


class MultiRLModule(torch.nn.ModuleDict):
    """{module_id: RLModule}, weights as {module_id: weights}; `state_dict()` names every weight
    "<module_id>.<name>", so one checkpoint file holds all modules."""

    def get_state(self, inference_only: bool = False) -> dict[ModuleID, dict[str, np.ndarray]]:
        return {mid: module.get_state(inference_only=inference_only) for mid, module in self.items()}

    def set_state(self, state: dict[ModuleID, dict[str, np.ndarray]]) -> None:
        """Load the modules named in `state`; the others keep their weights."""
        if unknown := set(state) - set(self.keys()):
            raise KeyError(f"MultiRLModule.set_state(): no module {sorted(unknown)[0]!r}; its "
                           f"modules are {sorted(self.keys())}.")
        for mid, weights in state.items():
            self[mid].set_state(weights)


def build_multi_rl_module(config: "AlgorithmConfig", spec: MultiRLModuleSpec) -> MultiRLModule:
    """A MultiRLModule with freshly initialized modules, as `spec` (spaces filled in) describes."""
    return MultiRLModule({
        mid: build_module(module_config(config, mid, spec, k), s.observation_space, s.action_space)
        for k, (mid, s) in enumerate(spec.rl_module_specs.items())})
