"""The one place that picks a torch device, and the torch.distributed backend that goes with it.

RLlib's names: `get_device(config, num_gpus_requested)` (ray/rllib/utils/framework.py). A Learner
asks with `num_gpus_per_learner`, an EnvRunner that holds a torch module with
`num_gpus_per_env_runner`. Inside a Ray actor that reserved GPUs, Ray sets CUDA_VISIBLE_DEVICES to
the GPUs it was given, so "cuda:0" is the actor's own GPU (one that two actors with 0.5 GPU each
share); in the driver (the local learner) it is the machine's first GPU.
torch is imported only when a device is picked, so this module costs a runner nothing.
"""

from typing import TYPE_CHECKING, Any

from rlcourse.utils.validation import ConfigError, setter_of

if TYPE_CHECKING:
    from rlcourse.algorithms.algorithm_config import AlgorithmConfig


def get_device(config: "AlgorithmConfig", num_gpus_requested: float,
               setting: str = "num_gpus_per_learner") -> Any:
    """torch.device("cpu") when no GPU was requested, else this process's (first) CUDA device.

    Where a GPU was requested but torch sees no CUDA (a CPU build of torch, or a Ray node started
    with --num-gpus on a machine without one), fail with the setting named, instead of silently
    computing on the CPU while a GPU is reserved."""
    import torch

    if num_gpus_requested <= 0:
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise ConfigError(setting, num_gpus_requested, "this process was given a GPU but torch "
                          f"sees no CUDA device (torch {torch.__version__}, CUDA build: "
                          f"{torch.version.cuda is not None}). Set {setting}=0 to compute on the "
                          "CPU, or install a CUDA build of torch (`rm -rf .venv && make install "
                          "TORCH_INDEX=https://download.pytorch.org/whl/cu128`).",
                          setter_of(config, setting))
    return torch.device("cuda", 0)


def get_distributed_backend(device_type: str, num_gpus_per_learner: float) -> str:
    """"nccl" for learners that each hold a whole GPU, "gloo" otherwise.

    NCCL all-reduces between GPUs without a trip through host memory, but refuses two ranks on one
    device, which is what fractional GPUs (num_gpus_per_learner=0.5) give; gloo all-reduces CPU
    tensors, and CUDA tensors through host memory, so it serves both of the other cases."""
    return "nccl" if device_type == "cuda" and num_gpus_per_learner >= 1 else "gloo"


def to_numpy(tensor: Any) -> Any:
    """A tensor's values as a NumPy array, from whichever device it is on."""
    return tensor.detach().cpu().numpy()
