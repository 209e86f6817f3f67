"""The trained modules, read and run in this process (`Algorithm.get_module`, `compute_actions`): the
Learner's own module when it runs here, else a copy with the learners' weights (IMPALA's learner
thread keeps changing its own)."""

from typing import TYPE_CHECKING, Any

import numpy as np

from rlcourse.core import DEFAULT_MODULE_ID
from rlcourse.core.rl_module.numpy_mlp import to_env_actions
from rlcourse.utils.observation_batch import observation_batch

if TYPE_CHECKING:
    from rlcourse.algorithms.algorithm import Algorithm


def trained_module(algo: "Algorithm", module_id: str | None = None, copy: bool = False) -> Any:
    """Module `module_id` (None: single-agent, the one module; multi-agent, the MultiRLModule)."""
    learners = algo.learner_group
    if learners.is_local and not copy:
        return _by_id(algo, learners.local_learner.module, module_id)
    if algo.module_spec is None:  # a copy: built from the config, with the learners' weights
        from rlcourse.core.rl_module.rl_module import build_module
        module = build_module(algo.config, algo.observation_space, algo.action_space)
    else:
        from rlcourse.core.rl_module.multi_rl_module import build_multi_rl_module
        module = build_multi_rl_module(algo.config, algo.module_spec)
    module.set_state(learners.get_weights())
    return _by_id(algo, module, module_id)


def _by_id(algo: "Algorithm", module: Any, module_id: str | None) -> Any:
    if module_id is None or (algo.module_spec is None and module_id == DEFAULT_MODULE_ID):
        return module
    if algo.module_spec is not None and module_id in module:
        return module[module_id]
    raise KeyError(f"get_module({module_id!r}): no module {module_id!r}; this algorithm's modules "
                   f"are {sorted(algo._module_spaces())}.")


def compute_actions(algo: "Algorithm", observations: np.ndarray, explore: bool = False,
                    module_id: str | None = None) -> np.ndarray:
    """Env actions of module `module_id` (of `algo.get_module`) for a batch of observations."""
    import torch

    if module_id is None and algo.module_spec is not None:
        raise ValueError("compute_actions(): name the policy with module_id=... for a multi-agent "
                         f"algorithm (one of {sorted(algo._module_spaces())}).")
    module = algo.get_module(module_id)
    obs_space, action_space = algo._module_spaces()[module_id or DEFAULT_MODULE_ID]
    connectors = algo.env_to_module  # they take the env's observations (with merged statistics)
    space = obs_space if connectors is None else connectors.input_observation_space
    observations = observation_batch(observations, space, "compute_actions(observations=...)")
    if connectors is not None:  # as the runners see them
        connectors.set_state(algo.env_runner_group.env_to_module_state)
        observations = connectors(observations)
    obs = torch.as_tensor(np.asarray(observations), device=module.device)  # a local GPU learner's
    with torch.no_grad():
        inputs = module.forward_inference({"obs": obs})["action_dist_inputs"]
        actions = (module.get_action_dist(inputs).sample() if explore
                   else module.greedy_actions(inputs))
    return to_env_actions(actions.cpu().numpy(), action_space)
