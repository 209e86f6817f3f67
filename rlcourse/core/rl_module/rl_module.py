"""RLModule: a policy's neural network(s) in torch; Learners call `forward_train`, greedy acting
`forward_inference`. Runners run the default MLP in NumPy (`numpy_mlp.py`), a custom one in torch."""

import itertools
import os
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from rlcourse.core import STATE_IN, STATE_OUT
from rlcourse.core.rl_module.cnn_encoder import conv_layers, torch_cnn
from rlcourse.core.rl_module.default_model_config import space_info, uses_cnn
from rlcourse.core.rl_module.numpy_mlp import ActionHead, InferenceModule, default_action_head
from rlcourse.utils.checkpoints import CheckpointError

if TYPE_CHECKING:
    from rlcourse.algorithms.algorithm_config import AlgorithmConfig

_TORCH_ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU, "linear": nn.Identity}


class RLModule(nn.Module):
    """Base class: subclasses build layers in `setup()` and implement `_forward`, `compute_values`."""

    # A checkpoint's frozen env-to-module connectors (RLModule.from_checkpoint), for raw observations.
    env_to_module: Any = None
    # The names' prefixes of the weights a runner acts with (RLlib's modules name the converse, in
    # `get_non_inference_attributes`); empty: every weight.
    inference_prefixes: tuple[str, ...] = ()

    def __init__(self, observation_space: gym.Space, action_space: gym.Space, model_config: dict):
        super().__init__()
        self.observation_space = observation_space
        self.action_space = action_space
        self.model_config = model_config
        self.discrete_actions = isinstance(action_space, gym.spaces.Discrete)
        self.setup()

    def setup(self) -> None:
        raise NotImplementedError

    def _forward(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Return {"action_dist_inputs": ...} for batch["obs"]."""
        raise NotImplementedError

    def get_initial_state(self) -> np.ndarray | None:
        """None for a stateless module; a stateful one's state for one sub-env (it then takes
        sequences [B, T, ...] from batch[STATE_IN] [B, ...] and returns STATE_OUT)."""
        return None

    def compute_values(self, batch: dict[str, torch.Tensor],
                       embeddings: torch.Tensor | None = None) -> torch.Tensor:
        """Value estimates V(obs), shape [B]; pass `forward_train`'s `embeddings` to reuse them."""
        raise NotImplementedError

    def forward_train(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return self._forward(batch)

    @torch.no_grad()
    def forward_exploration(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return self._forward(batch)

    @torch.no_grad()
    def forward_inference(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return self._forward(batch)

    def get_action_dist(self, action_dist_inputs: torch.Tensor) -> torch.distributions.Distribution:
        """Categorical over logits, or a diagonal Gaussian from [mean, log_std] halves (argument
        validation off: a cost on every minibatch)."""
        if self.discrete_actions:
            return torch.distributions.Categorical(logits=action_dist_inputs, validate_args=False)
        mean, log_std = action_dist_inputs.chunk(2, dim=-1)
        normal = torch.distributions.Normal(mean, log_std.exp(), validate_args=False)
        return torch.distributions.Independent(normal, 1, validate_args=False)

    def greedy_actions(self, action_dist_inputs: torch.Tensor) -> torch.Tensor:
        if self.discrete_actions:
            return action_dist_inputs.argmax(dim=-1)
        return action_dist_inputs.chunk(2, dim=-1)[0]

    @property
    def device(self) -> torch.device:
        """Where the weights are (the CPU for a module without any)."""
        return next(self.parameters(), torch.empty(0)).device

    def get_state(self, inference_only: bool = False) -> dict[str, np.ndarray]:
        """Weights as NumPy arrays: all of them (checkpoints) or, `inference_only`, those a runner
        acts with (`inference_prefixes`)."""
        state = self.state_dict()
        if inference_only and self.inference_prefixes:
            state = {k: v for k, v in state.items() if k.startswith(self.inference_prefixes)}
        return {k: v.detach().cpu().numpy().copy() for k, v in state.items()}

    def set_state(self, state: dict[str, np.ndarray]) -> None:
        """All weights, or only those a runner acts with: then every one of those must fit."""
        partial = bool(self.inference_prefixes) and all(
            k.startswith(self.inference_prefixes) for k in state)
        missing, unexpected = self.load_state_dict({k: torch.tensor(v) for k, v in state.items()},
                                                   strict=not partial)
        if unexpected or any(k.startswith(self.inference_prefixes) for k in missing):
            raise RuntimeError(f"These policy weights do not fit this module: unexpected "
                               f"{unexpected}, missing {missing}.")

    @classmethod
    def from_checkpoint(cls, path: str | os.PathLike, allowed: Iterable[Any] = ()) -> "RLModule":
        """An Algorithm checkpoint's trained module, without Ray, runners or a Learner. A custom
        module class must be allowed; `MyModule.from_checkpoint(path)` allows it."""
        from rlcourse.core.rl_module.module_loading import read_saved_module

        saved = read_saved_module(path, [*allowed, *([cls] if cls is not RLModule else [])])
        module = build_module(saved.config, saved.observation_space, saved.action_space)
        try:
            module.load_state_dict(saved.weights, strict=True)
        except RuntimeError as e:
            raise CheckpointError(f"{saved.source}: its weights do not fit the network its config "
                                  f"builds ({e}). The file was edited or is from another rlcourse."
                                  ) from None
        module.env_to_module = saved.connectors
        if not isinstance(module, cls):
            raise TypeError(f"The checkpoint {path} holds a {type(module).__name__}, not a "
                            f"{cls.__name__}: load it with RLModule.from_checkpoint(path).")
        return module.eval()

    def get_inference_module(self, head: ActionHead | None = None, seed: int | None = None
                             ) -> InferenceModule:
        """What an EnvRunner acts with: this module as its network, then `head` (default: the action
        space's categorical or diagonal Gaussian)."""
        return InferenceModule(TorchNetwork(self), head or default_action_head(self.action_space), seed)


def mlp(sizes: list[int], activation: str, encoder: bool = False) -> nn.Sequential:
    """Linear layers of the given sizes with `activation` between them; an `encoder` ends with it
    too, so that encoder + pi is one MLP."""
    layers = [layer for n_in, n_out in itertools.pairwise(sizes)
              for layer in (nn.Linear(n_in, n_out), _TORCH_ACTIVATIONS[activation]())]
    return nn.Sequential(*(layers if encoder else layers[:-1]))


class DefaultActorCriticModule(RLModule):
    """RLlib's default actor-critic MLP. `vf_share_layers=True` (IMPALA's default): one `encoder`
    under linear heads `pi` and `vf`; False (PPO's): `pi` and `vf` are separate MLPs. Images add a
    shared CNN (`cnn`) beneath. Runners get `cnn.*`, `encoder.*` and `pi.*` only."""

    inference_prefixes = ("cnn.", "encoder.", "pi.")

    def setup(self) -> None:
        self.info = space_info(self.observation_space, self.action_space)
        hiddens = list(self.model_config["fcnet_hiddens"])
        act = self.model_config["fcnet_activation"]
        self.cnn: nn.Module | None = None
        if (uses_cnn(self.info.obs_shape, self.model_config)  # images: cnn_encoder.py
                and (layers := conv_layers(self.info.obs_shape, self.model_config))):
            self.cnn, features = torch_cnn(self.observation_space, layers,
                                           self.model_config.get("conv_activation", "relu"))
            self.info = replace(self.info, obs_dim=features)
        # Checkpoints written before vf_share_layers existed hold two separate networks.
        self.vf_share_layers = bool(self.model_config.get("vf_share_layers", False))
        if self.vf_share_layers:
            self.encoder = mlp([self.info.obs_dim, *hiddens], act, encoder=True)
            features = hiddens[-1] if hiddens else self.info.obs_dim
            self.pi = mlp([features, self.info.dist_inputs_dim], act)
            self.vf = mlp([features, 1], act)
        else:
            self.encoder = nn.Sequential()
            self.pi = mlp([self.info.obs_dim, *hiddens, self.info.dist_inputs_dim], act)
            self.vf = mlp([self.info.obs_dim, *hiddens, 1], act)
        # Small last-layer weights start the policy near uniform (as CleanRL and RLlib do).
        nn.init.normal_(self.pi[-1].weight, std=0.01)
        nn.init.zeros_(self.pi[-1].bias)

    def _obs(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        obs = batch["obs"]
        if self.cnn is not None:  # [B, H, W, C] images, channels-first for torch's Conv2d
            return self.cnn(obs.float().permute(0, 3, 1, 2))
        return obs.float().reshape(obs.shape[0], -1)  # not len(obs): torch.export keeps shape[0] free

    def _forward(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The policy head's outputs, plus the shared encoder's `embeddings` when there is one."""
        if not self.vf_share_layers:
            return {"action_dist_inputs": self.pi(self._obs(batch))}
        embeddings = self.encoder(self._obs(batch))
        return {"action_dist_inputs": self.pi(embeddings), "embeddings": embeddings}

    def compute_values(self, batch: dict[str, torch.Tensor],
                       embeddings: torch.Tensor | None = None) -> torch.Tensor:
        if embeddings is None:
            embeddings = self.encoder(self._obs(batch))
        return self.vf(embeddings).squeeze(-1)


def build_module(config: "AlgorithmConfig", observation_space: gym.Space,
                 action_space: gym.Space) -> RLModule:
    """The learner's module: the configured class, or the algorithm's default."""
    module_class = config.rl_module_class or config.get_default_rl_module_spec().module_class
    return module_class(observation_space, action_space, config.get_model_config())


class TorchNetwork:
    """A custom torch RLModule as a runner's network: NumPy observations in, `action_dist_inputs` out
    (a stateful module steps sequences of length 1)."""

    def __init__(self, module: RLModule):
        self.module = module
        self.is_stateful = module.get_initial_state() is not None

    def get_initial_state(self) -> np.ndarray | None:
        return self.module.get_initial_state()

    @torch.no_grad()
    def step(self, obs: np.ndarray, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        device = self.module.device
        out = self.module.forward_inference({"obs": torch.as_tensor(obs, device=device)[:, None],
                                             STATE_IN: torch.as_tensor(state, device=device)})
        return out["action_dist_inputs"][:, 0].cpu().numpy(), out[STATE_OUT].cpu().numpy()

    def set_state(self, state: dict[str, np.ndarray]) -> None:
        self.module.set_state(state)

    @torch.no_grad()
    def action_dist_inputs(self, obs: np.ndarray) -> np.ndarray:
        out = self.module.forward_inference({"obs": torch.as_tensor(obs, device=self.module.device)})
        return out["action_dist_inputs"].cpu().numpy()
