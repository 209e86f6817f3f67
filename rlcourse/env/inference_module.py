"""build_inference_module: the module an EnvRunner (or MultiAgentEnvRunner) acts with.

The default module runs in NumPy on runners (`config.default_inference_module_class`, weights shipped
as arrays), so a runner process never imports torch for it; a custom `rl_module_class` is a torch
module, and the runner acts with its inference-only form (`get_inference_module`).
"""

from rlcourse.core.rl_module.default_model_config import space_info
from rlcourse.utils.imports import import_attr


def build_inference_module(config, observation_space, action_space, seed: int | None):
    """NumPy for the default module (no torch in this process); torch for a custom module class,
    on the runner's GPU where it was given one (`num_gpus_per_env_runner`)."""
    if config.rl_module_class is None:
        numpy_class = import_attr(config.default_inference_module_class)
        return numpy_class(space_info(observation_space, action_space), config.get_model_config(),
                           seed)
    from rlcourse.utils.framework import get_device  # imports torch: this runner holds torch anyway

    module = config.rl_module_class(observation_space, action_space, config.get_model_config())
    module.to(get_device(config, config.num_gpus_per_env_runner, "num_gpus_per_env_runner"))
    return module.get_inference_module(seed)
