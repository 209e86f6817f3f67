"""Helpers for the external-simulator tests: a server runner in this process (no Ray) with made-up
weights, and a raw connection that speaks RLlink byte by byte."""

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading

import gymnasium as gym
import numpy as np
from helpers import small_ppo

from rlcourse.env.external import client
from rlcourse.env.external.env_runner_server_for_external_inference import (
    TOKEN_ENV_VAR,
    EnvRunnerServerForExternalInference,
)

TOKEN = "test-token"
os.environ[TOKEN_ENV_VAR] = TOKEN  # as a driver sets it: runner actors and client.py read it
OBS_SPACE = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)


def external_config(**env_config):
    """A small PPO config whose runner serves CartPole-shaped simulators on a free port."""
    return (small_ppo().environment(observation_space=OBS_SPACE, action_space=gym.spaces.Discrete(2),
                                    env_config={"port": 0, **env_config})
            .env_runners(env_runner_cls=EnvRunnerServerForExternalInference))


def made_up_weights(seed: int = 0) -> dict[str, np.ndarray]:
    """The inference weights of SMALL_MODEL's policy (torch's names and shapes), at random."""
    rng = np.random.default_rng(seed)
    shapes = {"encoder.0": (64, 4), "encoder.2": (64, 64), "pi": (2, 64)}
    weights = {}
    for name, shape in shapes.items():
        weights[f"{name}.weight"] = rng.normal(0, 0.3, shape).astype(np.float32)
        weights[f"{name}.bias"] = rng.normal(0, 0.1, shape[0]).astype(np.float32)
    return weights


def start_runner(**env_config) -> EnvRunnerServerForExternalInference:
    runner = EnvRunnerServerForExternalInference(external_config(**env_config))
    runner.set_weights(made_up_weights())
    return runner


def _run_client(sent: list | None = None, **kwargs) -> None:
    with contextlib.suppress(OSError):  # the server stopped for good: the client gives up
        steps = client.run(**kwargs)
        if sent is not None:
            sent.append(steps)


def run_client_in_thread(runner, max_env_steps: int | None = 300, **kwargs) -> threading.Thread:
    """client.run() on CartPole against `runner`, on a daemon thread (`sent=[]`: the env steps it
    sent are appended; `inference="server"`: server-side inference)."""
    thread = threading.Thread(target=_run_client, daemon=True, kwargs={
        "env": gym.make("CartPole-v1"), "host": "127.0.0.1", "port": runner.address[1],
        "token": TOKEN, "steps_per_batch": 100, "max_env_steps": max_env_steps,
        "reconnect_timeout_s": 2.0, "seed": 0, **kwargs})
    thread.start()
    return thread


@contextlib.contextmanager
def client_processes(algo, steps_per_batch: int = 250, *args: str):
    """One client.py process (CartPole-v1; seeds 0, 1, ...) per server runner actor of `algo`,
    ended on the way out (after a failing test, too)."""
    ports = [address[1] for address in algo.env_runner_group.foreach_env_runner(
        lambda runner: runner.address)]
    processes = [subprocess.Popen(
        [sys.executable, client.__file__, "--port", str(port), "--seed", str(i),
         "--steps-per-batch", str(steps_per_batch), *args],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for i, port in enumerate(ports)]
    try:
        yield processes
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=10)


def raw_connect(runner, timeout_s: float = 5.0) -> socket.socket:
    return socket.create_connection(runner.address, timeout=timeout_s)


def send_raw(sock: socket.socket, body: bytes) -> None:
    sock.sendall(client.HEADER.pack(len(body)) + body)


def _read(sock: socket.socket, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def receive_raw(sock: socket.socket) -> dict | None:
    """The next message, or None if the server hung up."""
    try:
        header = _read(sock, 4)
    except ConnectionResetError:
        return None
    if header is None:
        return None
    return json.loads(_read(sock, client.HEADER.unpack(header)[0]))


def episode(t: int = 5, **changes) -> dict:
    """A good CartPole-shaped episode message entry, with `changes` applied."""
    data = {"obs": np.zeros((t + 1, 4), np.float32), "actions": np.zeros(t, np.int64),
            "rewards": np.ones(t, np.float32), "action_logp": np.full(t, -0.7, np.float32),
            "terminated": True, "truncated": False}
    data.update(changes)
    return {k: client.encode_array(v) if isinstance(v, np.ndarray) else v for k, v in data.items()}


def episodes(*entries) -> bytes:
    """An EPISODES message's body."""
    return json.dumps({"type": "EPISODES", "episodes": list(entries)}).encode()


def handshake(sock: socket.socket) -> None:
    send_raw(sock, json.dumps({"type": "PING", "token": TOKEN,
                               "protocol_version": client.PROTOCOL_VERSION}).encode())
    assert receive_raw(sock)["type"] == "PONG"
