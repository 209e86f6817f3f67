"""Serving a policy with Ray Serve on loopback: single and batch requests, actions equal to the
in-process module's, bad input answered with 4xx while the server stays up, the health check, a
checkpoint that fails at deploy time, PolicyClient and the production loop (a client-side env acting
over HTTP), a small load test, the proxy bound to 127.0.0.1 only and the replicas' gRPC servers
guarded by Ray's token, deploy/serve_config.yaml checked with Serve's own schema, and `rlcourse
serve` shut down by Ctrl-C or kill."""

import contextlib
import http.client
import itertools
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterable
from pathlib import Path

import grpc
import gymnasium as gym
import numpy as np
import psutil
import pytest
import yaml
from helpers import small_ppo
from ray import serve
from ray.serve.schema import ServeDeploySchema

from rlcourse.core.rl_module.module_loading import greedy_env_actions
from rlcourse.core.rl_module.rl_module import RLModule
from rlcourse.course.load_test import run_load
from rlcourse.course.serve_command import build_app
from rlcourse.serve import app as serve_app
from rlcourse.serve.app import PolicyDeployment
from rlcourse.serve.client import PolicyClient, ServeRequestError, run_episode
from rlcourse.serve.observations import MAX_BYTES, MAX_ROWS
from rlcourse.utils.imports import import_attr

pytestmark = pytest.mark.timeout(300)
ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> str:
    config = (small_ppo().environment("CartPole-v1")
              .training(train_batch_size_per_learner=200, minibatch_size=100).debugging(seed=0))
    with config.build_algo() as algo:
        algo.train()
        return algo.save_to_path(tmp_path_factory.mktemp("ckpt"))


@pytest.fixture(scope="module")
def server(ray_session, checkpoint):
    """One Serve application for the module (2 replicas, batching on); shut down at the end."""
    port = free_port()
    url = serve_app.start(serve_app.policy_app(checkpoint, num_replicas=2), port)
    yield url, port
    serve.shutdown()


@pytest.fixture(scope="module")
def module(checkpoint) -> RLModule:
    return RLModule.from_checkpoint(checkpoint)


def post(url: str, body: bytes | object) -> tuple[int, dict]:
    """POST `body` (bytes as they are, anything else as JSON) and return (status, JSON answer). The
    server may answer a body over its limit (413) and close before all of it is sent: the answer
    is read as it is."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.putrequest("POST", parts.path or "/")
        connection.putheader("Content-Type", "application/json")
        connection.putheader("Content-Length", str(len(data)))
        connection.endheaders()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            connection.send(data)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


OBS = np.random.default_rng(0).uniform(-0.3, 0.3, (16, 4)).astype(np.float32)


def test_one_observation_and_a_batch_get_the_in_process_actions(server, module):
    url, _ = server
    expected = greedy_env_actions(module, OBS).tolist()
    assert post(url, {"obs": OBS[0].tolist()}) == (200, {"actions": expected[:1]})
    assert post(url, {"obs": OBS.tolist()}) == (200, {"actions": expected})
    assert post(url + "act", {"obs": OBS[:3].tolist()}) == (200, {"actions": expected[:3]})


BAD = {
    "malformed JSON": (b'{"obs": [0.1, 0.2', 400, "not valid JSON"),
    "no obs field": ({"observations": [0.0] * 4}, 400, "no field 'obs'"),
    "wrong shape": ({"obs": [0.0] * 3}, 400, "shape (3,)"),
    "ragged batch": ({"obs": [[0.0] * 4, [0.0] * 3]}, 400, "ragged"),
    "strings": ({"obs": ["a", "b", "c", "d"]}, 400, "strings"),
    "booleans": ({"obs": [True, False, True, False]}, 400, "true/false"),
    "NaN": (b'{"obs": [0.0, NaN, 0.0, 0.0]}', 400, "NaN"),
    "infinity": (b'{"obs": [[0.0, 0.0, 0.0, 0.0], [0.0, Infinity, 0.0, 0.0]]}', 400, "row 1"),
    "out of space": ({"obs": [9.0, 0.0, 0.0, 0.0]}, 400, "outside the observation space"),
    "empty batch": ({"obs": []}, 400, "empty batch"),
    "too many rows": ({"obs": [[0.0] * 4] * (MAX_ROWS + 1)}, 413, f"at most {MAX_ROWS}"),
    "too many bytes": (b" " * (MAX_BYTES + 1), 413, "bytes"),
    "nested 100,000 deep": (b'{"obs": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", 400,
                            "nested too deeply"),
    "a 5,000-digit number": (b'{"obs": [' + b"1" * 5000 + b', 0, 0, 0]}', 400, "too long"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_gets_a_4xx_answer_and_the_server_stays_up(server, module, case):
    url, _ = server
    body, status, message = BAD[case]
    code, answer = post(url, body)
    assert code == status and message in answer["error"], answer
    assert post(url, {"obs": OBS[:2].tolist()}) == (200, {"actions": greedy_env_actions(
        module, OBS[:2]).tolist()})


def serve_memory(processes: list[psutil.Process]) -> int:
    """Resident bytes of Serve's proxy and replicas."""
    total = 0
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            total += process.memory_info().rss
    return total


def send(port: int, chunks: Iterable[bytes], length: int | None = None) -> tuple[int, str]:
    """POST `chunks` with a Content-Length of `length`, or chunked if None; the status and error.
    The server may refuse and close before all is sent: then the answer is read as it is."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.putrequest("POST", "/")
        connection.putheader("Content-Type", "application/json")
        connection.putheader(*(("Transfer-Encoding", "chunked") if length is None
                               else ("Content-Length", str(length))))
        connection.endheaders()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            for chunk in chunks:
                connection.send(chunk if length else b"%x\r\n%s\r\n" % (len(chunk), chunk))
            if length is None:
                connection.send(b"0\r\n\r\n")
        response = connection.getresponse()
        return response.status, json.loads(response.read())["error"]
    finally:
        connection.close()


def test_floods_and_deep_nesting_are_refused_without_being_held(server, module):
    """400 MB sent chunked (no Content-Length to refuse it by), 400 MB with its Content-Length, and
    a JSON nested 500,000 deep, chunked: each gets its 4xx, and Serve's proxy and replicas stay
    within 50 MB of their idle memory, during and after. Serve's proxy queues a body for the
    replica as fast as it arrives; its body limit (rlcourse/serve/body_limit.py) answers the
    floods at 1 MiB ("at least": it counted as they streamed), so a replica slow to read cannot
    make the proxy hold the rest (hundreds of MB without it)."""
    _, port = server
    processes = [p for p in psutil.Process().children(recursive=True)
                 if any(name in " ".join(p.cmdline()) for name in ("ProxyActor", "ServeReplica"))]
    assert len(processes) >= 3, processes  # the proxy and two replicas
    for _ in range(20):  # warm: each replica has answered (its first answers allocate)
        assert post(f"http://127.0.0.1:{port}/", {"obs": OBS[:2].tolist()})[0] == 200
    idle = serve_memory(processes)
    peak = [idle]
    sending = threading.Event()
    sending.set()

    def watch() -> None:
        while sending.is_set():
            peak[0] = max(peak[0], serve_memory(processes))
            time.sleep(0.02)

    watcher = threading.Thread(target=watch)
    watcher.start()
    megabyte, nested = b" " * (1 << 20), b'{"obs": ' + b"[" * 500_000 + b"]" * 500_000 + b"}"
    try:
        code, error = send(port, itertools.repeat(megabyte, 400))
        assert code == 413 and re.search(rf"at least \d+ bytes, at most {MAX_BYTES}", error), error
        code, error = send(port, itertools.repeat(megabyte, 400), length=400 << 20)
        assert code == 413 and f"is {400 << 20} bytes" in error, error
        code, error = send(port, (nested[i:i + 65536] for i in range(0, len(nested), 65536)))
        assert code == 400 and "nested too deeply" in error, error
        time.sleep(0.5)
    finally:
        sending.clear()
        watcher.join()
    after = serve_memory(processes)
    assert peak[0] - idle < 50 * 2**20, f"Serve's memory rose by {(peak[0] - idle) / 2**20:.0f} MB"
    assert after - idle < 50 * 2**20, f"Serve kept {(after - idle) / 2**20:.0f} MB"
    assert post(f"http://127.0.0.1:{port}/", {"obs": OBS[:2].tolist()})[0] == 200


def test_health_check(server):
    url, _ = server
    with urllib.request.urlopen(url + "healthz", timeout=30) as response:
        assert json.loads(response.read()) == {"status": "ok"}
    assert serve.status().applications[serve_app.APP_NAME].status == "RUNNING"
    with PolicyClient(url) as client:
        assert client.health()


def test_the_client_side_env_loop_returns_what_the_in_process_policy_returns(server, module):
    """The production loop: the env runs on the client and acts through HTTP, one step a request."""
    url, _ = server

    class InProcess:
        def compute_actions(self, obs: np.ndarray) -> np.ndarray:
            return greedy_env_actions(module, obs)

    env = gym.make("CartPole-v1")
    with PolicyClient(url) as client:
        for seed in range(3):
            assert run_episode(client, env, seed) == run_episode(InProcess(), env, seed)
    env.close()


def test_the_policy_client_gets_the_in_process_actions_for_one_observation_and_a_batch(
        server, module):
    url, _ = server
    expected = greedy_env_actions(module, OBS)
    with PolicyClient(url) as client:
        one = client.compute_actions(OBS[0])
        batch = client.compute_actions(OBS)
    assert one.dtype == batch.dtype == np.int64
    np.testing.assert_array_equal(one, expected[:1])
    np.testing.assert_array_equal(batch, expected)


def test_a_bad_request_raises_the_status_and_the_servers_message_and_the_client_goes_on(
        server, module):
    url, _ = server
    with PolicyClient(url) as client:
        with pytest.raises(ServeRequestError, match=r"HTTP 400: .*shape \(3,\)") as error:
            client.compute_actions(np.zeros(3, np.float32))
        assert error.value.status == 400 and "shape (3,)" in error.value.message
        np.testing.assert_array_equal(client.compute_actions(OBS[:2]),
                                      greedy_env_actions(module, OBS[:2]))


def test_run_load_counts_every_request_and_none_fails(server):
    url, _ = server
    result = run_load(url, num_clients=2, requests=40, obs=OBS)
    assert result["requests"] == 40 and result["failed"] == 0
    assert 0 < result["p50"] <= result["p99"] and result["actions_per_s"] > 0
    assert result["cpu_clients"] > 0


def test_the_proxy_listens_on_loopback_only(server):
    _, port = server
    listening = [c.laddr.ip for c in psutil.net_connections(kind="inet")
                 if c.status == psutil.CONN_LISTEN and c.laddr.port == port]
    assert listening and set(listening) == {"127.0.0.1"}
    others = [a.address for addrs in psutil.net_if_addrs().values() for a in addrs
              if a.family == socket.AF_INET and not a.address.startswith("127.")]
    for address in others:
        with pytest.raises(OSError), socket.create_connection((address, port), timeout=5):
            pass


def test_a_checkpoint_that_cannot_load_fails_at_deploy_time_with_its_name(server, tmp_path):
    missing = tmp_path / "no_checkpoint_here"
    app = PolicyDeployment.options(name="broken").bind(str(missing))
    with pytest.raises(RuntimeError, match=r"CheckpointError: No checkpoint at .*no_checkpoint_here"):
        serve_app.deploy(app, name="broken", route_prefix="/broken")
    assert "broken" not in serve.status().applications
    assert post(server[0], {"obs": OBS[:1].tolist()})[0] == 200  # the other app still serves


def test_the_serve_config_file_is_valid_and_its_import_path_builds_the_app(checkpoint):
    document = yaml.safe_load((DEPLOY / "serve_config.yaml").read_text())
    schema = ServeDeploySchema.parse_obj(document)
    assert schema.http_options.host == "127.0.0.1"
    # `serve run` gets the proxy's body limit as `rlcourse serve` does.
    assert schema.controller_options.runtime_env == serve_app.CONTROLLER_OPTIONS["runtime_env"]
    (application,) = schema.applications
    builder = import_attr(application.import_path)
    assert builder is build_app
    app = builder({**application.args, "checkpoint": checkpoint})
    assert [d["name"] for d in document["applications"][0]["deployments"]] == [PolicyDeployment.name]
    assert isinstance(app, serve.Application)  # what `serve run` deploys
    with pytest.raises(ValueError, match="checkpoint"):
        builder({"checkpiont": checkpoint})


def _is_loopback(ip: str) -> bool:
    return ip == "::1" or ip.removeprefix("::ffff:").startswith("127.")  # IPv4 as IPv6 too


def check_listeners(processes: list[psutil.Process], port: int) -> None:
    """Serve's HTTP proxy listens on loopback only; the one listener Ray opens on every interface,
    each replica's internal gRPC server (Serve binds it to [::] and offers no setting), refuses a
    caller without the cluster's token."""
    listening = []
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            name = " ".join(process.cmdline())[:80]
            listening += [(name, c.laddr.ip, c.laddr.port) for c in process.net_connections("inet")
                          if c.status == psutil.CONN_LISTEN]
    http = [ip for _, ip, p in listening if p == port]
    assert http and all(_is_loopback(ip) for ip in http), listening
    exposed = [(name, ip, p) for name, ip, p in listening if not _is_loopback(ip)]
    assert exposed, "expected the replica's gRPC server on [::]; if Ray now binds loopback, drop " \
                    "the exception from README.md"
    assert all("ServeReplica" in name for name, _, _ in exposed), exposed
    for _, _, replica_port in exposed:
        with grpc.insecure_channel(f"127.0.0.1:{replica_port}") as channel:
            call = channel.unary_unary("/ray.serve.ASGIService/HandleRequest")
            with pytest.raises(grpc.RpcError) as refused:
                call(b"", timeout=30)
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED, refused.value


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_rlcourse_serve_answers_until_ctrl_c_or_kill_and_leaves_no_process(checkpoint, tmp_path,
                                                                           signum):
    """The command in its own process and its own Ray: serving, listening as check_listeners
    says, then SIGINT (Ctrl-C) or SIGTERM (`kill`, `timeout`, a container stopping) shuts
    everything down within seconds."""
    port = free_port()
    command = [sys.executable, "-m", "rlcourse", "serve", checkpoint, "--port", str(port)]
    # Output to a file, not a pipe nobody drains: a full pipe would block the command mid-shutdown.
    # A session of its own: if the test fails, the command and all it started end together.
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, text=True,
                                   cwd=tmp_path, start_new_session=True,
                                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        deadline = time.monotonic() + 180
        while "serving" not in log.read_text() and process.poll() is None:
            assert time.monotonic() < deadline, log.read_text()[-2000:]
            time.sleep(0.2)
        assert "serving" in log.read_text(), log.read_text()[-2000:]
        assert post(f"http://127.0.0.1:{port}/", {"obs": OBS[0].tolist()})[0] == 200
        started = psutil.Process(process.pid).children(recursive=True)
        assert started  # Ray's and Serve's processes
        check_listeners([psutil.Process(process.pid), *started], port)
        process.send_signal(signum)
        assert process.wait(timeout=120) == 0, log.read_text()[-2000:]
        _, alive = psutil.wait_procs(started, timeout=10)
        assert not alive, [p.name() for p in alive]
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)


def test_rlcourse_serve_with_a_bad_checkpoint_exits_naming_it(tmp_path):
    missing = tmp_path / "not_a_checkpoint"
    done = subprocess.run([sys.executable, "-m", "rlcourse", "serve", str(missing), "--port",
                           str(free_port())], capture_output=True, text=True, timeout=240,
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 1
    assert "No checkpoint at" in done.stderr and "not_a_checkpoint" in done.stderr.splitlines()[-1]
