"""build_inference_module: the module an EnvRunner (or MultiAgentEnvRunner) acts with.

A network, then the config's action head (core/rl_module/numpy_mlp.py). The default modules'
network is the NumPy MLP (core/rl_module/numpy_mlp.py, weights shipped as arrays), so a runner
process never imports torch for it; a custom `rl_module_class` is a torch module, and the runner
runs it as its network (`RLModule.get_inference_module`).
"""

import gymnasium as gym

from rlcourse.core.rl_module.default_model_config import space_info
from rlcourse.core.rl_module.numpy_mlp import InferenceModule, NumpyMLP


def build_inference_module(config, observation_space: gym.Space, action_space: gym.Space,
                           seed: int | None, worker_index: int = 0) -> InferenceModule:
    """NumPy for the default module (no torch in this process); torch for a custom module class,
    on the runner's GPU where it was given one (`num_gpus_per_env_runner`). `worker_index` picks
    per-runner exploration settings (Ape-X's epsilons)."""
    head = config.get_action_head(action_space, worker_index)
    if config.rl_module_class is None:
        network = NumpyMLP(space_info(observation_space, action_space), config.get_model_config())
        return InferenceModule(network, head, seed)
    from rlcourse.utils.framework import get_device  # imports torch: this runner holds torch anyway

    module = config.rl_module_class(observation_space, action_space, config.get_model_config())
    module.to(get_device(config, config.num_gpus_per_env_runner, "num_gpus_per_env_runner"))
    return module.get_inference_module(head, seed)
