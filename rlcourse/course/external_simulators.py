"""What lesson 14 runs beside its simulator processes: a simulator in a thread of the notebook whose
every message is noted (client.run with a recording Connection), for the protocol's timeline; and
a timed simulator process (timed_simulator.py) against a runner in the notebook, for the cost of
client-side against server-side inference (also benchmarks/external_sampling.py)."""

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time

import gymnasium as gym
import numpy as np

from rlcourse.env.external import client
from rlcourse.env.external.env_runner_server_for_external_inference import (
    TOKEN_ENV_VAR,
    EnvRunnerServerForExternalInference,
)


class _RecordingConnection(client.Connection):
    """A client.Connection that tells `recorder` of each message it sends and receives."""

    def __init__(self, recorder: "RecordedExchange", *args):
        self.recorder = recorder
        super().__init__(*args)

    def send(self, message: dict) -> None:
        before = self.wire_bytes
        super().send(message)
        self.recorder.note("simulator", message["type"], self.wire_bytes - before)

    def receive(self) -> dict:
        before = self.wire_bytes
        message = super().receive()
        self.recorder.note("server", message["type"], self.wire_bytes - before)
        return message


class RecordedExchange:
    """client.run on CartPole against the runner at `port`, on a thread, until stop(); `log` holds
    (seconds since the start, sender, message type, bytes on the wire) per message."""

    def __init__(self, port: int, steps_per_batch: int = 500, seed: int = 0):
        self.log: list[tuple[float, str, str, int]] = []
        self.start = time.perf_counter()
        self.stopped = False
        self.connections: list[client.Connection] = []
        self.thread = threading.Thread(target=self._run, args=(port, steps_per_batch, seed),
                                       daemon=True)
        self.thread.start()

    def note(self, sender: str, kind: str, size: int = 0) -> None:
        self.log.append((time.perf_counter() - self.start, sender, kind, size))

    def _connect(self, host: str, port: int, token: str) -> client.Connection:
        if self.stopped:  # client.run reconnects after a hang-up: not once stopped
            raise ConnectionRefusedError("the recording has stopped")
        self.connections.append(_RecordingConnection(self, host, port, token))
        return self.connections[-1]

    def _run(self, port: int, steps_per_batch: int, seed: int) -> None:
        with contextlib.suppress(OSError):  # how stop() ends client.run
            client.run(gym.make("CartPole-v1"), "127.0.0.1", port, os.environ[TOKEN_ENV_VAR],
                       steps_per_batch, seed=seed, reconnect_timeout_s=0.0, connect=self._connect)

    def stop(self) -> None:
        """Hang up (the batch being sampled is never sent) and wait for the thread to end."""
        self.stopped = True
        for connection in self.connections:
            with contextlib.suppress(OSError):
                connection.sock.shutdown(socket.SHUT_RDWR)
        self.thread.join(timeout=10)


def time_inference(config, weights: dict[str, np.ndarray], inference: str, env_steps: int) -> dict:
    """One timed simulator process, client- or server-side `inference`, sending `env_steps` env
    steps to a server runner in this process (no Ray) that holds `weights` and takes its episodes
    as they come: the median and 95th percentile of its observation -> action times, its env steps
    per second, and the bytes on the wire per env step (both ways, weights and headers included)."""
    runner = EnvRunnerServerForExternalInference(config)
    runner.set_weights(weights)
    process = subprocess.Popen([sys.executable, "-m", "rlcourse.course.timed_simulator",
                                str(runner.address[1]), inference, str(env_steps)],
                               stdout=subprocess.PIPE, text=True)
    try:
        taken = 0  # (sample() wants episodes: no client waits for weights)
        while taken < env_steps:
            taken += sum(map(len, runner.sample(num_timesteps=min(env_steps - taken, 1000))))
        report = json.loads(process.communicate(timeout=120)[0].splitlines()[-1])
    finally:
        process.kill()  # (if the sampling failed; it has ended otherwise)
        process.wait()
        runner.stop()
    median, p95 = np.percentile(report["times"], [50, 95])
    return {"inference": f"{inference}-side", "median_us": median * 1e6, "p95_us": p95 * 1e6,
            "env_steps_per_s": report["steps"] / report["seconds"], "env_steps": report["steps"],
            "wire_bytes_per_env_step": runner.wire_bytes / report["steps"]}
