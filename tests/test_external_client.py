"""client.py is one file a simulator can copy: it imports neither rlcourse nor Ray nor torch, and
its copies of the framing (rllink.py) and of the runners' forward pass (numpy_mlp.py) agree."""

import contextlib
import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from external_helpers import TOKEN, made_up_weights, start_runner

from rlcourse.core.rl_module.default_model_config import space_info
from rlcourse.core.rl_module.numpy_mlp import LOG_STD_MAX, LOG_STD_MIN, NumpyMLP
from rlcourse.env.external import client, rllink

pytestmark = pytest.mark.timeout(30)
CLIENT = Path(client.__file__)
BLOCKER = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in {'rlcourse', 'ray', 'torch', 'gymnasium'}:
            raise ImportError('blocked: ' + name)
sys.meta_path.insert(0, Block())
import importlib.util
spec = importlib.util.spec_from_file_location('client', sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print(sorted(m for m in sys.modules if m.split('.')[0] in {'rlcourse', 'ray', 'torch'}))
"""


def test_the_client_imports_with_rlcourse_ray_torch_and_gymnasium_blocked():
    out = subprocess.run([sys.executable, "-c", BLOCKER, str(CLIENT)], capture_output=True,
                         text=True, timeout=30, cwd="/")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_the_clients_framing_is_rllinks():
    assert client.PROTOCOL_VERSION == rllink.PROTOCOL_VERSION
    assert client.HEADER.format == rllink.HEADER.format
    values = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert np.array_equal(rllink.decode_array("x", client.encode_array(values)), values)
    assert np.array_equal(client.decode_array(rllink.encode_array(values)), values)


def test_the_clients_forward_pass_is_the_runners():
    runner = start_runner()
    try:
        message = json.loads(json.dumps(runner.state_message()[0]))  # as it travels
        config = json.loads(json.dumps(runner.config_message()))
    finally:
        runner.stop()
    policy = client.Policy(config, seed=0)
    policy.set_state(message)
    network = NumpyMLP(space_info(runner.observation_space, runner.action_space),
                       {"fcnet_activation": "tanh"})
    network.set_state(made_up_weights())
    obs = np.random.default_rng(0).normal(size=(16, 4)).astype(np.float32)
    np.testing.assert_allclose(policy.forward(obs), network.action_dist_inputs(obs), rtol=1e-5,
                               atol=1e-6)
    action, logp = policy.act(obs[0])
    logits = network.action_dist_inputs(obs[:1])[0].astype(np.float64)
    assert action in (0, 1)
    assert logp == pytest.approx(logits[action] - np.log(np.exp(logits).sum()), abs=1e-5)
    probs = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    actions = [policy.act(obs[0])[0] for _ in range(4000)]  # sampled as the policy says
    assert np.mean(actions) == pytest.approx(probs[1], abs=0.03)
    assert (client.LOG_STD_MIN, client.LOG_STD_MAX) == (LOG_STD_MIN, LOG_STD_MAX)  # SAC's clamp


def test_a_simulator_of_other_spaces_or_an_empty_batch_is_refused_naming_the_setting():
    runner = start_runner()
    try:
        with pytest.raises(ValueError, match=r"env.observation_space is Box.*\(6,\).*the server "
                                             r"runner's observation_space is Box \[4\]"):
            client.run(gym.make("Acrobot-v1"), *runner.address, TOKEN, max_env_steps=10)
        with pytest.raises(ValueError, match=r"env.action_space is Discrete\(3\), the server "
                                             r"runner's action_space is Discrete 2"):
            client.run(FourObservations(gym.make("Acrobot-v1")), *runner.address, TOKEN,
                       max_env_steps=10)
        with pytest.raises(ValueError, match="steps_per_batch=0: .*at least 1 step per batch"):
            client.run(gym.make("CartPole-v1"), *runner.address, TOKEN, steps_per_batch=0)
    finally:
        runner.stop()
    out = subprocess.run([sys.executable, str(CLIENT), "--steps-per-batch", "0"], capture_output=True,
                         text=True, timeout=30)  # (the token is in the environment)
    assert out.returncode == 2 and "--steps-per-batch 0: at least 1" in out.stderr


def test_a_refused_token_or_simulator_closes_its_connection_at_once(monkeypatch):
    """A refusal (ServerError) or an error in run() (a simulator of other spaces) closes the socket
    before the error reaches the caller, not whenever the garbage collector gets to it."""
    opened, create_connection = [], socket.create_connection

    def recording(*args, **kwargs) -> socket.socket:
        opened.append(create_connection(*args, **kwargs))
        return opened[-1]

    monkeypatch.setattr(client.socket, "create_connection", recording)
    runner = start_runner()
    try:
        with pytest.raises(client.ServerError, match="wrong or missing token"):
            client.Connection(*runner.address, "not-the-token")
        with pytest.raises(ValueError, match="env.observation_space is Box"):
            client.run(gym.make("Acrobot-v1"), *runner.address, TOKEN, max_env_steps=10)
        assert client.run(gym.make("CartPole-v1"), *runner.address, TOKEN, max_env_steps=20) >= 20
    finally:
        runner.stop()
    assert len(opened) == 3 and [s.fileno() for s in opened] == [-1, -1, -1]


class FourObservations(gym.ObservationWrapper):
    """Acrobot's six numbers cut to CartPole's four: its observations fit, its 3 actions do not."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)

    def observation(self, obs: np.ndarray) -> np.ndarray:
        return obs[:4]


def test_a_server_that_is_down_or_hangs_up_on_each_batch_is_named_and_given_up_on():
    runner = start_runner()
    answers = {"PING": {"type": "PONG", "protocol_version": client.PROTOCOL_VERSION},
               "GET_CONFIG": runner.config_message(), "GET_STATE": runner.state_message()[0]}
    runner.stop()
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    address, stop = listener.getsockname(), threading.Event()

    def hang_up_on_batches():  # answers the handshake, config and weights; drops every batch
        while not stop.is_set():
            with contextlib.suppress(OSError):
                sock = listener.accept()[0]
                with sock:
                    sock.settimeout(5)
                    while (kind := receive(sock)["type"]) in answers:
                        sock.sendall(client.frame(answers[kind]))
        listener.close()

    thread = threading.Thread(target=hang_up_on_batches, daemon=True)
    thread.start()
    started = time.monotonic()
    with pytest.raises(ConnectionError, match=rf"127.0.0.1:{address[1]} for reconnect_timeout_s=0.5"):
        client.run(gym.make("CartPole-v1"), *address, TOKEN, reconnect_timeout_s=0.5)
    assert time.monotonic() - started < 20  # the default gives up after 30 s
    stop.set()
    thread.join(timeout=5)
    for connect in (lambda: client.Connection(*address, TOKEN),  # the server is gone
                    lambda: client.run(gym.make("CartPole-v1"), *address, TOKEN,
                                       reconnect_timeout_s=0.3)):
        with pytest.raises(ConnectionError, match=rf"cannot reach the server runner at 127.0.0.1:"
                                                  rf"{address[1]} .*start the algorithm.*"
                                                  r"env_config\['port'\] \+ i"):
            connect()


def receive(sock: socket.socket) -> dict:
    (length,) = client.HEADER.unpack(client.read_exactly(sock, client.HEADER.size))
    return json.loads(client.read_exactly(sock, length))


def test_a_server_that_hangs_up_during_the_handshake_leaves_no_socket_open(monkeypatch):
    """A hang-up (or a timeout) before PONG: the ConnectionError reaches the caller with the
    socket already closed, as run() needs to reconnect without leaking one per try."""
    opened, create_connection = [], socket.create_connection

    def recording(*args, **kwargs) -> socket.socket:
        opened.append(create_connection(*args, **kwargs))
        return opened[-1]

    monkeypatch.setattr(client.socket, "create_connection", recording)
    with socket.create_server(("127.0.0.1", 0)) as listener:
        hang_up = threading.Thread(target=lambda: listener.accept()[0].close())
        hang_up.start()
        with pytest.raises(ConnectionError):  # "closed the connection" or "reset by peer"
            client.Connection(*listener.getsockname(), TOKEN, timeout_s=10)
        hang_up.join(timeout=10)
    assert len(opened) == 1 and opened[0].fileno() == -1
