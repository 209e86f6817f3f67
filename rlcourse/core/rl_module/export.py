"""A trained policy as one file that runs with torch alone (`torch.export`): obs -> greedy action.

    export_policy(module, "policy.pt2")
    policy = torch.export.load("policy.pt2").module()   # no rlcourse, no gymnasium needed
    actions = policy(torch.as_tensor(observations))      # a batch of any size

torch.export traces the module's `forward_inference` into a graph of torch operations, with the
batch size left free, and saves the graph with the weights. TorchScript (`torch.jit`) does the same
job but is deprecated in favour of torch.export.
"""

import os
from pathlib import Path

import gymnasium as gym
import torch
from torch import nn

from rlcourse.core.rl_module.default_model_config import env_action_offset
from rlcourse.core.rl_module.rl_module import RLModule


class GreedyPolicy(nn.Module):
    """The env's greedy actions of a module, as one forward(obs) that torch.export can trace."""

    def __init__(self, module: RLModule):
        super().__init__()
        self.module = module
        self.offset = env_action_offset(module.action_space)  # Discrete(n, start=k): add k
        space = module.action_space  # a Box's actions are clipped into its bounds, as runners do
        self.bounds = ((torch.as_tensor(space.low), torch.as_tensor(space.high))
                       if isinstance(space, gym.spaces.Box) else None)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        inputs = self.module.forward_inference({"obs": obs})["action_dist_inputs"]
        actions = self.module.greedy_actions(inputs)
        if self.bounds is not None:
            return torch.clamp(actions, *self.bounds)
        return actions + self.offset


def example_batch(module: RLModule, size: int = 2) -> torch.Tensor:
    """`size` observations from the module's observation space (a batch of 1 would fix the size)."""
    space = module.observation_space
    return torch.as_tensor(space.sample()[None].repeat(size, 0) if space.shape
                           else [space.sample()] * size)


def export_policy(module: RLModule, path: str | os.PathLike) -> Path:
    """Write `module`'s greedy policy to `path` (a .pt2 file); return its absolute path."""
    policy = GreedyPolicy(module).eval()
    batch = torch.export.Dim("batch")
    program = torch.export.export(policy, (example_batch(module),),
                                  dynamic_shapes={"obs": {0: batch}})
    path = Path(path).resolve()
    torch.export.save(program, path)
    return path
