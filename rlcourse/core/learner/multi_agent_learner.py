"""MultiAgentLearner: one single-agent Learner per module (RLlib's holds a MultiRLModule and an
optimizer per module), so each module's loss and update are the single-agent lessons' code."""

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from rlcourse.core.learner.learner import Learner, to_cpu
from rlcourse.core.rl_module.multi_rl_module import MultiRLModule
from rlcourse.core.rl_module.multi_rl_module_spec import MultiRLModuleSpec, module_config
from rlcourse.env.multi_agent_episode import ModuleID
from rlcourse.env.single_agent_episode import SingleAgentEpisode
from rlcourse.utils.checkpoints import CheckpointError
from rlcourse.utils.state_values import check_like

if TYPE_CHECKING:
    from rlcourse.algorithms.algorithm_config import AlgorithmConfig


class MultiAgentLearner:
    """{module_id: Learner}, with the Learner interface the LearnerGroup calls."""

    def __init__(self, config: "AlgorithmConfig", spec: MultiRLModuleSpec):
        self.config = config
        learner_class = config.get_default_learner_class()
        self.learners: dict[ModuleID, Learner] = {
            mid: learner_class(module_config(config, mid, spec, k), s.observation_space,
                               s.action_space)
            for k, (mid, s) in enumerate(spec.rl_module_specs.items())}
        # The same module objects, in one container: state_dict() names weights "<module_id>.<name>".
        self.module = MultiRLModule({mid: learner.module for mid, learner in self.learners.items()})

    def open_store_socket(self) -> tuple[str, int]:
        return next(iter(self.learners.values())).open_store_socket()

    def setup_distributed(self, rank: int, world_size: int, host: str, port: int,
                          num_threads: int = 1, store_path: str | None = None) -> None:
        """The first module's Learner joins the process group; the others join it as members."""
        first, *others = self.learners.values()
        first.setup_distributed(rank, world_size, host, port, num_threads, store_path)
        for learner in others:
            learner.join_group(rank, world_size)

    def update(self, episodes: dict[ModuleID, list[SingleAgentEpisode]],
               num_minibatches: dict[ModuleID, int]) -> dict[ModuleID, dict[str, float]]:
        """Update each module in `episodes` on its agents' steps, in the same order on every
        data-parallel copy, so their all-reduces pair up."""
        return {mid: self.learners[mid].update(module_episodes, num_minibatches[mid])
                for mid, module_episodes in episodes.items()}

    def get_weights(self, inference_only: bool = False) -> dict[ModuleID, dict[str, np.ndarray]]:
        return self.module.get_state(inference_only=inference_only)

    def set_weights(self, weights: dict[ModuleID, dict[str, np.ndarray]]) -> None:
        """Load the modules named in `weights` (e.g. a snapshot of "main" into "main_v1")."""
        self.module.set_state(weights)

    def get_state(self) -> dict[str, Any]:
        """The Learner state of a single module, with every part keyed by module id, except
        `module` (one state dict, "<module_id>.<name>") and `torch_rng` (one per process)."""
        states = {mid: learner.get_state() for mid, learner in self.learners.items()}
        return {"module": to_cpu(self.module.state_dict()),
                "optimizer": {mid: state.pop("optimizer") for mid, state in states.items()},
                "torch_rng": torch.get_rng_state(),
                "rng": {mid: state.pop("rng") for mid, state in states.items()},
                "modules": {mid: {k: v for k, v in state.items() if k not in ("module", "torch_rng")}
                            for mid, state in states.items()}}

    def check_state(self, state: dict[str, Any], name: Callable[[str], str] = str) -> None:
        """Refuse a saved `get_state()` before any module takes it: all weights, then each
        module's part with its Learner's check_state."""
        check_like(state["module"], to_cpu(self.module.state_dict()), name("module"))
        for key in ("optimizer", "rng", "modules"):
            if not isinstance(state[key], dict) or set(state[key]) != set(self.learners):
                raise CheckpointError(f"{name(key)} must be a dict with this algorithm's modules "
                                      f"{sorted(self.learners)}.")
        for mid, learner in self.learners.items():
            if not isinstance(state["modules"][mid], dict):
                raise CheckpointError(f"{name('modules')}[{mid!r}] must be a dict.")
            learner.check_state(
                _module_state(state, mid),
                lambda key, mid=mid: (name(key) if key == "torch_rng" else
                                      f"{name(key)}[{mid!r}]" if key in ("optimizer", "rng") else
                                      f"{name('modules')}[{mid!r}].{key}"))

    def set_state(self, state: dict[str, Any]) -> None:
        for mid, learner in self.learners.items():
            prefix = f"{mid}."
            learner.set_state({**_module_state(state, mid), "module": {
                k[len(prefix):]: v for k, v in state["module"].items() if k.startswith(prefix)}})


def _module_state(state: dict[str, Any], mid: ModuleID) -> dict[str, Any]:
    """Module `mid`'s Learner state in a MultiAgentLearner's (its weights aside)."""
    return {"optimizer": state["optimizer"][mid], "torch_rng": state["torch_rng"],
            "rng": state["rng"][mid], **state["modules"][mid]}
