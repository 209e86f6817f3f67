"""What an Algorithm checkpoint says its RLModule is (config, spaces, weights, frozen connectors),
and acting with a module without Ray, runners or a Learner: its greedy env actions, or a
`torch.export` file of them that runs with torch alone."""

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from rlcourse.connectors.env_to_module.env_to_module_pipeline import (
    EnvToModulePipeline,
    build_env_to_module_pipeline,
)
from rlcourse.connectors.env_to_module.flatten_observations import FlattenObservations
from rlcourse.connectors.env_to_module.mean_std_filter import EPSILON, MeanStdFilter
from rlcourse.core.rl_module.numpy_mlp import env_action_offset, to_env_actions
from rlcourse.env.registry import env_name, is_registered, probe_spaces
from rlcourse.utils.checkpoint_contents import config_from_json
from rlcourse.utils.checkpoints import CheckpointError, read_checkpoint
from rlcourse.utils.validation import ConfigError

if TYPE_CHECKING:
    from rlcourse.algorithms.algorithm_config import AlgorithmConfig
    from rlcourse.core.rl_module.rl_module import RLModule


def frozen_env_to_module(config: "AlgorithmConfig", observation_space: Any, action_space: Any,
                         state: list | None) -> EnvToModulePipeline | None:
    """The config's env-to-module connectors with the checkpoint's statistics, frozen (or None)."""
    if config.env_to_module_connector is None:
        return None
    pipeline = build_env_to_module_pipeline(config, observation_space, action_space)
    pipeline.update_stats = False
    pipeline.set_state(state)
    return pipeline


class SavedModule(NamedTuple):
    """A checkpoint's module as data; `source` names the file in errors."""

    config: "AlgorithmConfig"
    observation_space: Any
    action_space: Any
    weights: dict[str, torch.Tensor]
    connectors: EnvToModulePipeline | None
    source: str


def read_saved_module(path: str | os.PathLike, allowed: Iterable[Any] = ()) -> SavedModule:
    """The checkpoint's module, its config read with the allowlist `allowed` (your classes and env
    creators it names; never its callbacks class)."""
    state, tensors = read_checkpoint(path)
    source = f"The checkpoint {path}"
    if "config" not in state or "module" not in tensors.get("learner.pt", {}):
        raise CheckpointError(f"{source} has no config or no learner.pt module weights: it is not "
                              "an Algorithm checkpoint. Pass the directory algo.save_to_path() wrote.")
    config = config_from_json(state["config"], source, allowed, skip={"callbacks_class"},
                              is_registered=is_registered)
    observation_space, action_space = probe_spaces(config.get_env_creator(), config.env_config,
                                                   env_name(config.env))
    connectors = frozen_env_to_module(config, observation_space, action_space,
                                      state.get("algorithm", {}).get("env_to_module_state"))
    if connectors is not None:  # the module was built for what the connectors return
        observation_space = connectors.observation_space
    return SavedModule(config, observation_space, action_space, tensors["learner.pt"]["module"],
                       connectors, source)


def env_observation_space(module: "RLModule") -> Any:
    """The space of the raw env observations `greedy_env_actions` takes (before any connectors)."""
    connectors = module.env_to_module
    return module.observation_space if connectors is None else connectors.input_observation_space


def greedy_env_actions(module: "RLModule", observations: Any) -> np.ndarray:
    """The env's greedy actions for a batch of raw env observations (through frozen connectors)."""
    if module.env_to_module is not None:
        observations = module.env_to_module(observations)
    with torch.no_grad():
        out = module.forward_inference({"obs": torch.as_tensor(np.asarray(observations))})
        actions = module.greedy_actions(out["action_dist_inputs"]).numpy()
    return to_env_actions(actions, module.action_space)



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

    def __init__(self, module: "RLModule"):
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


def export_policy(module: "RLModule", path: str | os.PathLike) -> Path:
    """Write `module`'s greedy policy to `path`, a .pt2 file that runs with torch alone, and
    return its absolute path: `torch.export.load(path).module()(torch.as_tensor(observations))`.
    Its frozen connectors are traced into it; those that cannot be are refused."""
    policy = GreedyPolicy(module).eval()  # refuses connectors it cannot trace
    space = env_observation_space(module)  # traced on 2 raw observations: 1 would fix the size
    example = torch.as_tensor(space.sample()[None].repeat(2, 0) if space.shape
                              else [space.sample()] * 2)
    program = torch.export.export(policy, (example,),
                                  dynamic_shapes={"obs": {0: torch.export.Dim("batch")}})
    path = Path(path).resolve()
    torch.export.save(program, path)
    return path
