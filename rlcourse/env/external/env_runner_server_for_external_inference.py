"""EnvRunnerServerForExternalInference (RLlib's name): a runner whose envs are simulators that
connect over TCP (client.py), each served on a thread (client_session.py); `sample()` returns the
whole episodes they send, so algorithms train unchanged.

    os.environ["RLCOURSE_EXTERNAL_TOKEN"] = "a shared secret"  # before build_algo(); never saved
    config.environment(observation_space=..., action_space=..., env_config={"port": 5555})
          .env_runners(env_runner_cls=EnvRunnerServerForExternalInference)
"""

import contextlib
import os
import socket
import threading
import time
from collections import deque
from typing import TYPE_CHECKING

import gymnasium as gym
import numpy as np

from rlcourse.core.rl_module import numpy_mlp
from rlcourse.core.rl_module.default_model_config import space_info
from rlcourse.env.env_runner import EnvRunner, SampleTimeoutError
from rlcourse.env.external.client_session import serve_client
from rlcourse.env.external.rllink import (
    PROTOCOL_VERSION,
    encode_array,
    send_message,
    space_message,
)
from rlcourse.env.external.server_settings import SERVER_SETTINGS, check_server_settings
from rlcourse.env.external.server_side_inference import HEADS
from rlcourse.env.registry import EnvCreator
from rlcourse.env.single_agent_episode import SingleAgentEpisode

if TYPE_CHECKING:
    from rlcourse.algorithms.algorithm_config import AlgorithmConfig

# The shared secret, in the driver's environment (runner actors get it through their Ray runtime
# env, as Ray's own token does), so checkpoints and Tune results never hold it.
TOKEN_ENV_VAR = "RLCOURSE_EXTERNAL_TOKEN"
# What the runner counts, in train()'s results under "env_runners" (per iteration and *_lifetime).
COUNTERS = ("num_external_clients_connected", "num_external_episodes_received",
            "num_external_messages_refused", "num_external_episodes_refused",
            "num_external_env_steps_dropped")


class EnvRunnerServerForExternalInference(EnvRunner):
    """Episodes from simulator processes that connect over TCP (one port per runner)."""

    num_envs = 1
    driver_env_vars = (TOKEN_ENV_VAR,)  # runner actors get the driver's token, never the config

    @classmethod
    def validate_config(cls, config: "AlgorithmConfig") -> None:
        check_server_settings(config)

    def __init__(self, config: "AlgorithmConfig", env_creator: EnvCreator | None = None,
                 worker_index: int = 0):
        super().__init__(config, env_creator, worker_index)
        if "token" in config.env_config:
            raise ValueError(f"env_config['token'] would be saved in checkpoints and Tune results: "
                             f"remove it and set the environment variable {TOKEN_ENV_VAR} in the "
                             "driver's process instead.")
        self.token = os.environ.get(TOKEN_ENV_VAR, "")
        if not self.token:
            raise ValueError(f"EnvRunnerServerForExternalInference needs a shared token: set the "
                             f"environment variable {TOKEN_ENV_VAR} in the driver's process (os.environ"
                             f"[{TOKEN_ENV_VAR!r}] = 'a secret', before build_algo(); runner actors get "
                             "it from there) and give each simulator's client the same token.")
        check_server_settings(config)
        settings = {**SERVER_SETTINGS, **config.env_config}
        self.observation_space = config.observation_space
        self.action_space = config.action_space
        self.head = config.get_action_head(self.action_space, worker_index)
        if (config.rl_module_class is not None or config.env_to_module_connector is not None
                or config.is_multi_agent or type(self.head) not in HEADS):
            raise ValueError("EnvRunnerServerForExternalInference runs the default MLP for one agent "
                             "with a categorical or Gaussian head (PPO, IMPALA, APPO), SAC's squashed "
                             "Gaussian or DQN's epsilon-greedy Q-values: simulators run it themselves "
                             "(client.py). Set no rl_module_class or env_to_module_connector, one "
                             f"policy and the algorithm's head (got {type(self.head).__name__}).")
        self.info = space_info(self.observation_space, self.action_space)  # refuses other spaces
        self.max_clients = settings["max_clients"]
        self.client_timeout_s = float(settings["client_timeout_s"])
        self.max_message_bytes = settings["max_message_bytes"]
        self.max_episode_steps = settings["max_episode_steps"]
        # Episodes wait here for sample(); the oldest go beyond a few requests' worth (add_episodes).
        self.max_queued_steps = max(4 * config.get_rollout_fragment_length(), self.max_episode_steps)
        self._queue: deque[SingleAgentEpisode] = deque()
        self._queued_steps = 0
        self._lock = threading.Condition()  # guards the queue, the weights and the client list
        self._layers: list | None = None  # the weights as sent to clients (SET_STATE)
        self.network: numpy_mlp.NumpyMLP | None = None  # the same, for server-side inference
        self._layers_version = -1  # counts the weights taken, for clients waiting on new ones
        self._wanted: tuple[int, int] | None = None  # (steps, episodes) a waiting sample() needs
        self._clients: list[socket.socket] = []
        self.wire_bytes = 0  # both ways, headers included
        self.counts = dict.fromkeys(COUNTERS, 0)  # since this runner started (count() adds)
        self._reported = dict(self.counts)  # as of the last get_metrics()
        self.stopping = False
        port = int(settings["port"])  # 0: a free port, which `address` tells
        port = port + worker_index if port else 0
        try:
            self._listener = socket.create_server((settings["host"], port))
        except OSError as e:
            raise OSError(e.errno, f"EnvRunnerServerForExternalInference {worker_index} cannot listen "
                          f"on {settings['host']}:{port} ({e.strerror}): runner i listens on "
                          "env_config['port'] + i; pick a free base port, or 0 for any.") from e
        self._listener.settimeout(0.2)  # how often the accept loop looks at `stopping`
        self.address: tuple[str, int] = self._listener.getsockname()[:2]
        self.name = f"{type(self).__name__} {worker_index} on {self.address[0]}:{self.address[1]}"
        self._thread = threading.Thread(target=self._accept_loop, daemon=True, name=self.name)
        self._thread.start()

    # -- clients ---------------------------------------------------------------------------------

    def _accept_loop(self) -> None:
        while not self.stopping:
            try:
                sock, peer = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # closed by stop()
            with self._lock:
                full = len(self._clients) >= self.max_clients
                if not full:
                    self._clients.append(sock)
            if not full:
                threading.Thread(target=serve_client, args=(sock, f"{peer[0]}:{peer[1]}", self),
                                 daemon=True).start()
                continue
            self.count("num_external_messages_refused")
            with contextlib.suppress(OSError):
                sock.settimeout(1.0)
                send_message(sock, {"type": "ERROR", "message": f"{self.name} serves "
                                    f"{self.max_clients} clients already (env_config['max_clients'])"
                                    ": try another runner's port, or later."})
            sock.close()

    def client_left(self, sock: socket.socket) -> None:
        with self._lock:
            if sock in self._clients:
                self._clients.remove(sock)

    @property
    def num_clients(self) -> int:
        return len(self._clients)

    def count(self, counter: str, n: int = 1) -> None:
        """Add `n` to one of COUNTERS (from any client's thread)."""
        with self._lock:
            self.counts[counter] += n

    def get_metrics(self) -> dict:
        """The runner's metrics, with what it counted since the last call and the clients now
        connected (a mean: several reports may come per runner and iteration)."""
        with self._lock:
            counts, clients = dict(self.counts), len(self._clients)
        for name, total in counts.items():
            new = total - self._reported[name]
            self.metrics.log_value(name, new, reduce="sum", clear_on_reduce=True)
            self.metrics.log_value(f"{name}_lifetime", new, reduce="sum")
        self._reported = counts
        self.metrics.log_value("num_external_clients_per_runner", clients)
        return super().get_metrics()

    def config_message(self) -> dict:
        """SET_CONFIG: what a client needs to act as this runner would (no code, only data)."""
        return {"type": "SET_CONFIG", "protocol_version": PROTOCOL_VERSION,
                "observation_space": space_message(self.observation_space),
                "action_space": space_message(self.action_space), "head": HEADS[type(self.head)],
                "activation": self.config.get_model_config()["fcnet_activation"],
                "explore": bool(self.config.explore), "max_episode_steps": self.max_episode_steps,
                "max_message_bytes": self.max_message_bytes}

    def state_message(self, newer_than: int | None = None) -> tuple[dict, int]:
        """SET_STATE (the layers `x @ w + b`) and its version. With `newer_than`, wait for newer
        weights unless sample() waits for episodes (RLlib's on-policy sampling: simulators idle
        while the learner trains)."""
        def ready() -> bool:
            return self._layers is not None and (
                newer_than is None or self._layers_version > newer_than
                or self._wanted is not None or self.stopping)  # no client waits while sample() does

        with self._lock:
            # (Within half the client's timeout: a client waiting that long gets the weights held.)
            if not self._lock.wait_for(ready, self.client_timeout_s / 2) and self._layers is None:
                raise TimeoutError("no weights yet")
            epsilon = ({"epsilon": self.head.epsilon} if isinstance(self.head, numpy_mlp.EpsilonGreedy)
                       else {})
            return {"type": "SET_STATE", "weights_seq_no": self.weights_seq_no,
                    "layers": self._layers, **epsilon}, self._layers_version

    def add_episodes(self, episodes: list[SingleAgentEpisode]) -> None:
        """Queue checked episodes for sample(), dropping the oldest beyond `max_queued_steps` (stale
        weights) but never below what a waiting sample() needs: it may ask for more than that."""
        with self._lock:
            for episode in episodes:
                self._queue.append(episode)
                self._queued_steps += len(episode)
            self.counts["num_external_episodes_received"] += len(episodes)
            steps, count = self._wanted or (0, 0)
            while (self._queued_steps - len(self._queue[0]) >= max(self.max_queued_steps, steps)
                   and len(self._queue) > count):
                dropped = len(self._queue.popleft())
                self._queued_steps -= dropped
                self.counts["num_external_env_steps_dropped"] += dropped
            self._lock.notify_all()

    # -- the runner's side -----------------------------------------------------------------------

    def _set_module_weights(self, weights: dict[str, np.ndarray]) -> None:
        network = numpy_mlp.NumpyMLP(self.info, self.config.get_model_config())
        network.set_state(weights)
        self._layers = [[encode_array(w), encode_array(b)] for w, b in network.layers]
        self.network = network  # (set_weights holds the lock)
        self._layers_version += 1
        self._lock.notify_all()

    def set_weights(self, weights: dict, weights_seq_no: int | None = None,
                    env_to_module_state: list | None = None, epsilon: float | None = None) -> None:
        with self._lock:  # clients get new layers only with their weights_seq_no (state_message)
            super().set_weights(weights, weights_seq_no, env_to_module_state, epsilon)

    def _set_epsilon(self, epsilon: float) -> None:
        self.head.epsilon = epsilon  # DQN's: clients get it with the weights (SET_STATE)

    def _initialize_weights(self) -> None:
        from rlcourse.core.rl_module.rl_module import build_module  # torch, in this process only

        module = build_module(self.config, self.observation_space, self.action_space)
        self.set_weights(module.get_state(inference_only=True))

    def _take(self, deadline: float | None, steps: int = 0, episodes: int = 0
              ) -> list[SingleAgentEpisode]:
        """Wait until the queue holds `steps` env steps and `episodes` episodes, then pop that many
        (whole episodes: the last may pass `steps`)."""
        # A runner actor answers before its group's own sample_timeout_s would end it.
        deadline = deadline or time.monotonic() + 0.9 * self.config.sample_timeout_s
        taken: list[SingleAgentEpisode] = []
        with self._lock:
            while self._queued_steps < steps or len(self._queue) < episodes:
                if self._wanted is None:
                    self._wanted = (steps, episodes)  # kept queued; clients waiting for weights go on
                    self._lock.notify_all()
                left = deadline - time.monotonic()
                if left <= 0:
                    self._wanted = None
                    raise SampleTimeoutError(
                        f"{self.name} received too few episodes within sample_timeout_s="
                        f"{self.config.sample_timeout_s} s from its {self.num_clients} "
                        "simulator(s): start client.py against this port, or raise "
                        "config.env_runners(sample_timeout_s=...).")
                self._lock.wait(min(left, 1.0))
            self._wanted = None
            while sum(map(len, taken)) < steps or len(taken) < episodes:
                taken.append(self._queue.popleft())
                self._queued_steps -= len(taken[-1])
        for episode in taken:
            self._episode_returns.append(episode.get_return())
            self._episode_lens.append(len(episode))
            self._count_steps(len(episode))
        return taken

    def _sample_steps(self, steps: int, explore: bool, deadline: float | None
                      ) -> list[SingleAgentEpisode]:
        """Whole episodes covering at least `steps` env steps (simulators explore as configured)."""
        return self._take(deadline, steps=steps)

    def _sample_episodes(self, num_episodes: int, explore: bool, deadline: float | None
                         ) -> list[SingleAgentEpisode]:
        return self._take(deadline, episodes=num_episodes)

    def get_spaces(self) -> tuple[gym.Space, gym.Space]:
        return self.observation_space, self.action_space

    def get_state(self) -> dict:
        """Only the step count: queued episodes are not saved (simulators send new ones)."""
        return {"num_env_steps_lifetime": self._num_env_steps_lifetime}

    def _check_state(self, state: dict, where: str) -> None:
        """Nothing beyond the step count (EnvRunner.check_state checks it) is saved."""

    def set_state(self, state: dict) -> None:
        self._num_env_steps_lifetime = state["num_env_steps_lifetime"]

    def stop(self) -> None:
        """Stop listening, wake clients waiting for weights, hang up on all (their threads end)."""
        self.stopping = True
        self._listener.close()
        with self._lock:
            clients, self._clients = list(self._clients), []
            self._lock.notify_all()
        for sock in clients:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(timeout=2.0)
