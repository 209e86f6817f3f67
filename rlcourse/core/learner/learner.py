"""Learner: the torch RLModule and its optimizer; `update(episodes)` is `build_batch`, then
`num_epochs` of minibatch SGD on `compute_loss`, all-reducing gradients between data-parallel
Learners so that all take the same steps."""

import contextlib
import copy
import math
import os
import socket
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
import torch
import torch.distributed as dist

from rlcourse.connectors.common.add_time_dim_to_batch_and_zero_pad import add_time_dim_to_all_obs
from rlcourse.connectors.learner.frame_stacking import build_learner_connector
from rlcourse.core import ALL_OBS_MASK, LOSS_MASK, STATE_IN
from rlcourse.core.learner.learner_state import check_optimizer_state, check_torch_rng
from rlcourse.core.rl_module.default_model_config import lstm_settings
from rlcourse.core.rl_module.rl_module import RLModule, build_module
from rlcourse.env.single_agent_episode import SingleAgentEpisode
from rlcourse.utils.framework import get_device, get_distributed_backend
from rlcourse.utils.serialization import from_plain, to_plain
from rlcourse.utils.state_values import check_counter, check_generator, check_like

if TYPE_CHECKING:
    from rlcourse.algorithms.algorithm_config import AlgorithmConfig


class NonFiniteUpdateError(FloatingPointError):
    """A minibatch's gradients were NaN or infinite; the update stopped before changing weights."""



@contextlib.contextmanager
def one_torch_thread() -> Iterator[None]:
    """Run torch on one thread (the process's count) until the block ends: on small batches more
    threads only add synchronization (benchmarks/gpu_learner.py times both counts)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


class Learner:
    """Base Learner; algorithms subclass it with `build_batch` and `compute_loss`."""

    def __init__(self, config: "AlgorithmConfig", observation_space: gym.Space, action_space: gym.Space):
        self.config = config
        if config.seed is not None:
            torch.manual_seed(config.seed)
        self.device = get_device(config, config.num_gpus_per_learner)
        self.module = build_module(config, observation_space, action_space).to(self.device)
        # episodes -> episodes, before build_batch (runners that stack frames check it: 1: none)
        self.learner_connector = None if config.learner_connector is None else (
            build_learner_connector(config, observation_space, action_space,
                                    None if config.env_to_module_connector else 1))
        self.optimizer = self.configure_optimizer()
        self.rng = np.random.default_rng(config.seed)
        self.world_size = 1
        self.num_updates = 0
        self.offline_iterator: Any = None  # this learner's split of offline data (update_from_iterator)
        self._store_socket: socket.socket | None = None  # rank 0's, until torch.distributed takes it

    def configure_optimizer(self) -> torch.optim.Optimizer:
        """Adam on all the module's weights at the one rate `learning_rates()` reads (`config.lr`;
        SAC: a group per loss); fused: one kernel for all parameters instead of a Python loop."""
        (lr,) = self.learning_rates()
        return torch.optim.Adam(self.module.parameters(), lr=lr, fused=True)

    def learning_rates(self) -> list[float]:
        """This config's learning rate of each of the optimizer's parameter groups, in order: the
        settings `config.learning_rate_settings` names (`lr`; SAC's three)."""
        return [getattr(self.config, setting) for setting in self.config.learning_rate_settings]

    def open_store_socket(self) -> tuple[str, int]:
        """Listen on the node's address (not every interface: the store is unauthenticated) for
        torch.distributed's rendezvous; return the (host, port) the others join."""
        import ray
        host = ray.util.get_node_ip_address()
        self._store_socket = socket.create_server((host, 0))
        return host, self._store_socket.getsockname()[1]

    def setup_distributed(self, rank: int, world_size: int, host: str, port: int,
                          num_threads: int = 1, store_path: str | None = None) -> None:
        """Join the process group (NCCL between whole GPUs, else gloo), taking rank 0's weights;
        on one machine, meet in `store_path`, a file only this user can open (not a TCP store)."""
        torch.set_num_threads(num_threads)
        if host.startswith("127."):
            # gloo and NCCL otherwise use the interface of the machine's hostname, maybe not loopback.
            os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
            os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")
        if store_path is not None:
            store = dist.FileStore(store_path, world_size)
            if rank == 0:
                self._store_socket.close()
        else:  # the store takes over rank 0's listening socket (and closes it when it ends)
            listen_fd = self._store_socket.detach() if rank == 0 else None
            store = dist.TCPStore(host, port, world_size, is_master=rank == 0,
                                  master_listen_fd=listen_fd)
        backend = get_distributed_backend(self.device.type, self.config.num_gpus_per_learner)
        if backend == "nccl":
            torch.cuda.set_device(self.device)
        dist.init_process_group(backend, store=store, rank=rank, world_size=world_size)
        self.join_group(rank, world_size)

    def join_group(self, rank: int, world_size: int) -> None:
        """Take rank 0's weights and a random stream of this rank's."""
        self.world_size = world_size
        for param in self.module.parameters():
            dist.broadcast(param.data, src=0)
        self.rng = np.random.default_rng(None if self.config.seed is None else self.config.seed + rank)

    def all_reduce_sum(self, values: np.ndarray) -> np.ndarray:
        """Sum `values` over all learners (identity for a single learner)."""
        if self.world_size == 1:
            return values
        tensor = torch.as_tensor(values, dtype=torch.float64, device=self.device)
        dist.all_reduce(tensor)
        return tensor.cpu().numpy()

    def to_device(self, value: np.ndarray | torch.Tensor, dtype: torch.dtype | None = None
                  ) -> torch.Tensor:
        return torch.as_tensor(value, dtype=dtype, device=self.device)

    def all_obs_batch(self, flat: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Every observation of the flattened chunks, bootstrap ones included, for one forward pass
        (`forward_all_obs`); for a stateful module as padded sequences (add_time_dim_to_all_obs)."""
        if STATE_IN not in flat:
            return {"all_obs": flat["all_obs"]}
        return add_time_dim_to_all_obs(flat, lstm_settings(self.config.model_config)["max_seq_len"])

    def build_batch(self, episodes: list[SingleAgentEpisode]) -> dict[str, torch.Tensor | np.ndarray]:
        """The update's batch (tensors or arrays); `update` moves it to `self.device`, once."""
        raise NotImplementedError

    def compute_loss(self, batch: dict[str, torch.Tensor]
                     ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Return (total loss, {name: scalar} to report) for one minibatch."""
        raise NotImplementedError

    def update(self, episodes: list[SingleAgentEpisode], num_minibatches: int | None = None
               ) -> dict[str, float]:
        """Minibatch SGD over the batch built from `episodes`; returns mean loss statistics.
        `num_minibatches` is the config's, not the shard's: all learners take the same steps."""
        if self.learner_connector is not None:
            episodes = self.learner_connector(episodes)
        batch = {k: self.to_device(v) for k, v in self.build_batch(episodes).items()}
        size = len(batch["actions"])
        num_minibatches = num_minibatches or self.config.get_num_minibatches_per_epoch()
        stats: dict[str, list[torch.Tensor | float]] = {}
        for _ in range(self.config.num_epochs):
            for index in self.minibatch_indices(size, num_minibatches):
                minibatch = {k: v[index] for k, v in batch.items()}
                loss, metrics = self.compute_loss(minibatch)
                self.optimizer.zero_grad(set_to_none=False)
                loss.backward()
                try:
                    metrics["gradients_default_optimizer_global_norm"] = self.apply_gradients(
                        num_steps(minibatch))
                except NonFiniteUpdateError as e:
                    e.add_note("This learner's minibatch: " + ", ".join(
                        f"{name}={float(value):.4g}" for name, value in metrics.items()))
                    raise
                for name, value in metrics.items():  # read back once, after the last step
                    stats.setdefault(name, []).append(value)
        self.num_updates += 1
        results = {name: float(torch.stack([self.to_device(v, torch.float64) for v in values]).mean())
                   for name, values in stats.items()}
        results["num_env_steps_trained"] = num_steps(batch)
        results["default_optimizer_learning_rate"] = self.optimizer.param_groups[0]["lr"]
        return results

    def update_from_batch(self, batch: dict[str, np.ndarray], **kwargs: Any) -> dict[str, Any]:
        """One update on a batch of rows: the learners of replay and offline algorithms write it."""
        raise NotImplementedError(f"{type(self).__name__} learns from episodes (update()), not from "
                                  "a batch of rows.")

    def update_from_iterator(self, iterator: Any = None, **kwargs: Any) -> dict[str, Any]:
        """`update_from_batch` on the next batch of this learner's split of offline data (the
        iterator comes with the first call and is kept; its rows never pass through the driver)."""
        if iterator is not None:
            self.offline_iterator = iterator
        return self.update_from_batch(self.offline_iterator.next_batch(), **kwargs)

    def minibatch_indices(self, size: int, num_minibatches: int) -> list[torch.Tensor | slice]:
        """A shuffled split of the batch; learners that need steps in order override this."""
        permutation = self.to_device(self.rng.permutation(size))
        return list(torch.tensor_split(permutation, num_minibatches))

    def apply_gradients(self, minibatch_size: int) -> float:
        """Average gradients over learners (weighted by their real steps), clip, and step; a non-finite
        norm raises NonFiniteUpdateError on every learner before any weight changes."""
        if self.world_size > 1:
            params = [p for p in self.module.parameters() if p.grad is not None]
            # One all-reduce: every gradient times this shard's size, plus the size itself.
            flat = torch.cat([p.grad.reshape(-1) * minibatch_size for p in params]
                             + [self.to_device([float(minibatch_size)])])
            dist.all_reduce(flat)
            flat = flat[:-1] / flat[-1]
            for p, grad in zip(params, flat.split([p.numel() for p in params]), strict=True):
                p.grad.copy_(grad.view_as(p))
        max_norm = self.config.grad_clip if self.config.grad_clip is not None else math.inf
        # Clipped per parameter group: each group is one loss's parameters (one group but for SAC).
        group_norms = [torch.nn.utils.clip_grad_norm_(
            [p for p in group["params"] if p.grad is not None], max_norm)
            for group in self.optimizer.param_groups]
        norm = math.hypot(*map(float, group_norms))
        if not math.isfinite(norm):
            raise NonFiniteUpdateError(
                f"The Learner's loss or gradients are not finite (gradient norm {norm}) in update "
                f"{self.num_updates}; it stopped before the weights changed. The runners check the "
                "env's observations and rewards, so look at the update: a lower lr (config."
                "training(lr=...)), a grad_clip (config.training(grad_clip=...)), or a custom "
                "loss or module that divides by zero or takes the log of 0.")
        self.optimizer.step()
        return norm

    def get_weights(self, inference_only: bool = False) -> dict[str, np.ndarray]:
        return self.module.get_state(inference_only=inference_only)

    def set_weights(self, weights: dict[str, np.ndarray]) -> None:
        self.module.set_state(weights)

    def get_state(self) -> dict[str, Any]:
        """Everything an update depends on, tensors copied to the CPU (a GPU learner's checkpoint
        loads anywhere, and saving can overlap the next update)."""
        return {"module": to_cpu(self.module.state_dict()),
                "optimizer": to_cpu(self.optimizer.state_dict()),
                "torch_rng": torch.get_rng_state(), "rng": to_plain(self.rng),
                "num_updates": self.num_updates}

    def check_state(self, state: dict[str, Any], name: Callable[[str], str] = str) -> None:
        """Refuse a saved `get_state()` this learner could not continue from, before any is taken;
        `name(key)` names the field and its file. Subclasses check what they add."""
        if "module" in state:  # a MultiAgentLearner checks its modules' weights at once
            check_like(state["module"], to_cpu(self.module.state_dict()), name("module"))
        check_optimizer_state(state["optimizer"], self.optimizer, name("optimizer"))
        check_torch_rng(state["torch_rng"], name("torch_rng"))
        check_generator(state["rng"], name("rng"))
        check_counter(state["num_updates"], name("num_updates"))

    def set_state(self, state: dict[str, Any]) -> None:
        """Load a `get_state`; torch copies the tensors onto this learner's device."""
        self.module.load_state_dict(state["module"])
        self.optimizer.load_state_dict(state["optimizer"])
        # The learning rate is this config's, not the checkpoint's: Population Based Training
        # continues a trial from another's checkpoint with a perturbed lr.
        for group, lr in zip(self.optimizer.param_groups, self.learning_rates(), strict=True):
            group["lr"] = lr
        torch.set_rng_state(state["torch_rng"])
        self.rng = from_plain(state["rng"])
        self.num_updates = state["num_updates"]


def num_steps(batch: dict[str, torch.Tensor]) -> int:
    """The env steps a batch holds: a stateful module's sequences count their real steps, not
    the padding (the losses average over those, so learners' gradients are weighted by them)."""
    return int(batch[LOSS_MASK].sum()) if LOSS_MASK in batch else len(batch["actions"])


def forward_all_obs(module: RLModule, batch: dict[str, torch.Tensor], dist_inputs: bool = True,
                    values: bool = True) -> dict[str, torch.Tensor]:
    """`module`'s "action_dist_inputs" and "values" (those asked for) at every observation of an
    `all_obs_batch`, flat, padding dropped; the value head reuses a shared encoder's output."""
    inputs = {"obs": batch["all_obs"], **({STATE_IN: batch[STATE_IN]} if STATE_IN in batch else {})}
    out = module.forward_train(inputs) if dist_inputs else {}
    if values:
        out["values"] = module.compute_values(inputs, out.get("embeddings"))
    mask = batch.get(ALL_OBS_MASK)
    return {k: out[k] if mask is None else out[k][mask]
            for k in ("action_dist_inputs", "values") if k in out}


def to_cpu(state: Any) -> Any:
    """A deep copy of a (nested) state dict with every tensor on the CPU."""
    if isinstance(state, torch.Tensor):
        return state.detach().to("cpu", copy=True)
    if isinstance(state, dict):
        return {k: to_cpu(v) for k, v in state.items()}
    if isinstance(state, (list, tuple)):
        return type(state)(to_cpu(v) for v in state)
    return copy.deepcopy(state)
