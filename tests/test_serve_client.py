"""The policy client without Serve: one keep-alive connection, a reconnection when the server closed
it, the dtypes of actions, errors that are not the deployment's JSON, the health check's path, and
the production loop. A stdlib server on loopback plays the served policy."""

import http.server
import json
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import gymnasium as gym
import numpy as np
import pytest

from rlcourse.course.load_test import run_load
from rlcourse.serve.client import PolicyClient, ServeRequestError, ServerUnreachable, run_episode

pytestmark = pytest.mark.timeout(60)


@contextmanager
def fake_server(status: int = 200, answer: object = None, keep_alive: bool = True
                ) -> Iterator[tuple[str, list[tuple[int, str, str]]]]:
    """A server on 127.0.0.1 answering every request with `status` and `answer` (bytes as they are,
    anything else as JSON). Without `keep_alive` it closes each connection after one answer without
    saying so, as a server whose idle timeout ran out does. Yields its URL and the (client port,
    method, path) of each request."""
    body = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
    seen: list[tuple[int, str, str]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive unless the server closes

        def answer(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            seen.append((self.client_address[1], self.command, self.path))
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            self.close_connection = not keep_alive

        do_GET = do_POST = answer

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/policy/", seen
    finally:
        server.shutdown()
        server.server_close()


OBS = np.zeros(4, np.float32)


@pytest.mark.parametrize("keep_alive", [True, False])
def test_one_connection_while_the_server_keeps_it_and_a_new_one_when_it_closed_it(keep_alive):
    with (fake_server(answer={"actions": [1]}, keep_alive=keep_alive) as (url, seen),
          PolicyClient(url) as client):
        answers = [client.compute_actions(OBS).tolist() for _ in range(3)]
    assert answers == [[1]] * 3
    assert [path for _, _, path in seen] == ["/policy/"] * 3
    assert len({port for port, _, _ in seen}) == (1 if keep_alive else 3)


def test_integer_actions_come_back_as_int64_and_others_as_float32():
    with fake_server(answer={"actions": [[0.5, -1.0]]}) as (url, _), PolicyClient(url) as client:
        actions = client.compute_actions(OBS)
    assert actions.dtype == np.float32 and actions.tolist() == [[0.5, -1.0]]
    with fake_server(answer={"actions": [0, 2]}) as (url, _), PolicyClient(url) as client:
        assert client.compute_actions(np.stack([OBS, OBS])).dtype == np.int64


def test_an_error_answer_that_is_not_the_deployments_json_keeps_its_text():
    with (fake_server(503, b"no replica is ready") as (url, _), PolicyClient(url) as client,
          pytest.raises(ServeRequestError, match="HTTP 503: no replica is ready") as error):
        client.compute_actions(OBS)
    assert error.value.status == 503


def test_health_asks_healthz_next_to_the_url_and_is_false_when_nobody_answers():
    with fake_server(answer={"status": "ok"}) as (url, seen), PolicyClient(url) as client:
        assert client.health()
    assert seen[0][1:] == ("GET", "/policy/healthz")
    with PolicyClient(url) as nobody:  # the server is gone
        assert not nobody.health()


def test_a_url_without_http_is_refused():
    with pytest.raises(ValueError, match="http://127.0.0.1:8000/"):
        PolicyClient("127.0.0.1:8000")
    for timeout_s in (0, float("inf"), 1e300, float("nan"), True, "30"):  # inf, 1e300: each call crashed
        with pytest.raises(ValueError, match=r"timeout_s=.*: .* a finite number > 0"):
            PolicyClient("http://127.0.0.1:8000/", timeout_s=timeout_s)


@pytest.mark.parametrize("url", ["http://127.0.0.1:0/", "http://127.0.0.1:65536/",
                                 "http://127.0.0.1:80a/", "http://127.0.0.1:-1/"])
def test_a_url_whose_port_is_no_tcp_port_is_refused_by_name(url):
    """Not the stdlib's "Port out of range", nor port 0 quietly read as 80."""
    with pytest.raises(ValueError, match=re.escape(f"url {url!r}: its port is no TCP port; give "
                                                   "one in 1..65535")):
        PolicyClient(url)


@pytest.mark.parametrize("answer", [b"<html>a proxy's page</html>", {"result": [1]},
                                    {"actions": None}, {"actions": [[1, 2], [3]]},
                                    {"actions": ["left"]}, {"actions": [1, 2, 3]}])
def test_an_answer_that_is_not_numeric_actions_for_each_observation_names_the_url(answer):
    with (fake_server(answer=answer) as (url, _), PolicyClient(url) as client,
          pytest.raises(ValueError, match=rf"bad answer from {url}: expected .*actions.* a number per "
                                          r"observation.*rlcourse serve")):
        client.compute_actions(np.stack([OBS, OBS]))


def test_a_server_that_is_down_or_silent_is_named_with_its_url():
    with fake_server() as (url, _):
        pass  # the server is gone: its port refuses connections
    with (PolicyClient(url) as client, pytest.raises(
            ServerUnreachable, match=rf"cannot reach {url} \(ConnectionRefusedError.*rlcourse serve")):
        client.compute_actions(OBS)
    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts, never answers
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/"
        with (PolicyClient(url, timeout_s=0.2) as client,
              pytest.raises(ServerUnreachable, match=rf"cannot reach {url} \(TimeoutError.*0.2")):
            client.compute_actions(OBS)


def test_run_episode_resets_with_the_seed_steps_with_the_actions_and_sums_the_rewards():
    seen = []

    class Alternating:  # left, right, left, ...: the policy of a test, recording what it is shown
        def compute_actions(self, obs: np.ndarray) -> np.ndarray:
            seen.append(obs)
            return np.array([(len(seen) - 1) % 2])

    env = gym.wrappers.RecordEpisodeStatistics(gym.make("CartPole-v1"))
    total = run_episode(Alternating(), env, seed=3)
    assert total == env.return_queue[-1] and len(seen) == env.length_queue[-1] > 1
    obs, _ = env.reset(seed=3)
    for step, shown in enumerate(seen):  # the same episode again: the actions were the policy's
        np.testing.assert_array_equal(shown, obs[None])
        obs = env.step(step % 2)[0]
    env.close()


def test_run_load_counts_the_requests_nobody_answered_as_failed():
    with fake_server() as (url, _):
        pass  # the server is gone: its port refuses connections
    result = run_load(url, num_clients=2, requests=6, obs=np.zeros((2, 4), np.float32))
    assert result["requests"] == result["failed"] == 6 and result["actions_per_s"] == 0


def test_the_client_and_the_load_test_import_neither_ray_nor_torch():
    """A client machine needs NumPy, gymnasium and psutil only: no Ray, no torch."""
    code = ("import sys, rlcourse.serve.client, rlcourse.course.load_test; "
            "print(sorted(m for m in ('ray', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
