"""The one place that picks a torch device (RLlib's `get_device`) and its torch.distributed backend.
In a Ray actor "cuda:0" is the GPU Ray gave it (CUDA_VISIBLE_DEVICES)."""

from typing import Any

from rlcourse.utils.validation import ConfigError, setter_of


def get_device(config: object, num_gpus_requested: float,
               setting: str = "num_gpus_per_learner") -> Any:
    """CPU when no GPU was requested, else this process's first CUDA device; a GPU requested where
    torch sees no CUDA fails, rather than computing on the CPU unnoticed. `config` (an
    AlgorithmConfig) only names the setter to fix in that error."""
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
    """"nccl" for learners that each hold a whole GPU (it refuses two ranks on one device, as
    fractional GPUs give), "gloo" otherwise (CPU tensors, or CUDA ones through host memory)."""
    return "nccl" if device_type == "cuda" and num_gpus_per_learner >= 1 else "gloo"


def to_numpy(tensor: Any) -> Any:
    """A tensor's values as a NumPy array, from whichever device it is on."""
    return tensor.detach().cpu().numpy()
