"""A trained policy as one `torch.export` file that runs with torch alone: raw obs -> greedy action.

    export_policy(module, "policy.pt2")
    actions = torch.export.load("policy.pt2").module()(torch.as_tensor(observations))

The module's frozen connectors become torch operations in the graph; those that cannot be traced
are refused rather than exported into a policy expecting observations the caller does not have.
"""

import os
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from rlcourse.connectors.env_to_module.flatten_observations import FlattenObservations
from rlcourse.connectors.env_to_module.mean_std_filter import EPSILON, MeanStdFilter
from rlcourse.core.rl_module.module_loading import env_observation_space
from rlcourse.core.rl_module.numpy_mlp import env_action_offset
from rlcourse.core.rl_module.rl_module import RLModule
from rlcourse.utils.validation import ConfigError


class TracedConnector(nn.Module):
    """A MeanStdFilter (its statistics frozen) or a FlattenObservations of a Box, Discrete or
    MultiDiscrete space (one-hot, as the connector does), in torch."""

    def __init__(self, connector: object):
        super().__init__()
        space = getattr(connector, "input_observation_space", None)
        if isinstance(connector, MeanStdFilter):
            stats, self.kind, self.clip = connector.running_stats, "filter", connector.clip_by_value
            if stats is None:  # Discrete observations: the filter leaves them as they are
                self.kind = "identity"
                return
            mean = stats.mean if connector.de_mean_to_zero else np.zeros_like(stats.mean)
            scale = stats.std + EPSILON if connector.de_std_to_one else np.ones_like(stats.mean)
            self.register_buffer("mean", torch.as_tensor(mean, dtype=torch.float64))
            self.register_buffer("scale", torch.as_tensor(scale, dtype=torch.float64))
        elif isinstance(connector, FlattenObservations) and isinstance(space, gym.spaces.Box):
            self.kind = "flatten"
        elif isinstance(connector, FlattenObservations) and isinstance(
                space, gym.spaces.Discrete | gym.spaces.MultiDiscrete):
            self.kind = "one_hot"  # each integer minus its start, one-hot among its n values
            sizes = space.nvec if isinstance(space, gym.spaces.MultiDiscrete) else space.n
            self.starts_sizes = list(zip(np.asarray(space.start).reshape(-1).tolist(),
                                         np.asarray(sizes).reshape(-1).tolist(), strict=True))
        else:
            raise ConfigError("env_to_module_connector", connector, "export_policy traces only "
                              "MeanStdFilter and FlattenObservations of a Box, Discrete or "
                              "MultiDiscrete observation space; process observations with "
                              "module.env_to_module and act with greedy_env_actions(module, obs) "
                              "instead of exporting.", "env_runners")

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        if self.kind == "identity":
            return obs
        if self.kind == "flatten":
            return obs.reshape(obs.shape[0], -1).to(torch.float32)
        if self.kind == "one_hot":
            columns = obs.reshape(obs.shape[0], -1).long()
            return torch.cat([nn.functional.one_hot(columns[:, j] - start, n).to(torch.float32)
                              for j, (start, n) in enumerate(self.starts_sizes)], dim=1)
        out = (obs.to(torch.float64) - self.mean) / self.scale
        if self.clip is not None:
            out = torch.clamp(out, -self.clip, self.clip)
        return out.to(torch.float32)


class GreedyPolicy(nn.Module):
    """The env's greedy actions of a module, as one forward(obs) that torch.export can trace."""

    def __init__(self, module: RLModule):
        super().__init__()
        self.module = module
        connectors = module.env_to_module.connectors if module.env_to_module is not None else []
        self.connectors = nn.ModuleList(TracedConnector(c) for c in connectors)
        self.offset = env_action_offset(module.action_space)  # Discrete(n, start=k): add k
        space = module.action_space  # a Box's actions are clipped into its bounds, as runners do
        self.bounds = ((torch.as_tensor(space.low), torch.as_tensor(space.high))
                       if isinstance(space, gym.spaces.Box) else None)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        for connector in self.connectors:
            obs = connector(obs)
        inputs = self.module.forward_inference({"obs": obs})["action_dist_inputs"]
        actions = self.module.greedy_actions(inputs)
        if self.bounds is not None:
            return torch.clamp(actions, *self.bounds)
        return actions + self.offset


def export_policy(module: RLModule, path: str | os.PathLike) -> Path:
    """Write `module`'s greedy policy to `path` (a .pt2 file); return its absolute path."""
    space = env_observation_space(module)  # traced on 2 raw observations: 1 would fix the size
    example = torch.as_tensor(space.sample()[None].repeat(2, 0) if space.shape
                              else [space.sample()] * 2)
    program = torch.export.export(GreedyPolicy(module).eval(), (example,),
                                  dynamic_shapes={"obs": {0: torch.export.Dim("batch")}})
    path = Path(path).resolve()
    torch.export.save(program, path)
    return path
