"""The client side of serving: `PolicyClient(url).compute_actions(obs)` POSTs {"obs": [...]} and
returns the actions, over one keep-alive connection. Needs neither Ray nor torch."""

import contextlib
import http.client
import json
import threading
import urllib.parse
from types import TracebackType
from typing import Any, Self

import gymnasium as gym
import numpy as np

JSON_HEADERS = {"Content-Type": "application/json"}


class ServeRequestError(RuntimeError):
    """The server refused a request (4xx) or failed on it (5xx): its HTTP status and its message."""

    def __init__(self, status: int, message: str):
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message


class ServerUnreachable(ConnectionError):
    """No answer from the server's URL: nothing listens there, the name does not resolve, or it
    stayed silent for timeout_s."""


class PolicyClient:
    """A served policy at `url` (as `rlcourse serve` prints it), over one persistent connection.
    Not thread-safe: give each thread its own client."""

    def __init__(self, url: str, timeout_s: float = 30.0):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"url {url!r}: give the server's address, e.g. http://127.0.0.1:8000/")
        try:
            port = parts.port
        except ValueError:  # not a number, or above 65535
            port = 0
        if port == 0:  # urlsplit reads ":0" as 0, which http.client would replace by 80
            raise ValueError(f"url {url!r}: its port is no TCP port; give one in 1..65535, e.g. "
                             "http://127.0.0.1:8000/")
        if not (isinstance(timeout_s, int | float) and not isinstance(timeout_s, bool)
                and 0 < timeout_s <= threading.TIMEOUT_MAX):  # (inf: every request would crash)
            raise ValueError(f"timeout_s={timeout_s!r}: give the seconds to wait for an answer, a "
                             "finite number > 0.")
        self.path = parts.path or "/"
        self._connection = http.client.HTTPConnection(parts.hostname, port or 80,
                                                      timeout=timeout_s)
        self.address = f"http://{parts.hostname}:{self._connection.port}"

    def compute_actions(self, obs: np.ndarray) -> np.ndarray:
        """The actions (int64 or float32) for one observation or a batch [N, ...] of them."""
        body = json.dumps({"obs": np.asarray(obs).tolist()}).encode()
        status, answer = self.request(body)
        if status != 200:
            raise ServeRequestError(status, _error_message(answer))
        rows = {1, len(obs) if np.ndim(obs) else 1}  # one observation, or a batch of them
        try:
            actions = np.asarray(json.loads(answer)["actions"])
            good = actions.dtype.kind in "iuf" and actions.ndim > 0 and len(actions) in rows
        except (ValueError, KeyError, TypeError):  # not JSON, no "actions", ragged lists
            good = False
        if not good:
            raise ValueError(f"bad answer from {self.address}{self.path}: expected {{\"actions\": "
                             f"[...]}}, a number per observation, got {answer[:200]!r}: is `rlcourse "
                             "serve` running there?")
        return actions.astype(np.int64 if actions.dtype.kind in "iu" else np.float32)

    def health(self) -> bool:
        """True if the server answers its health check (GET healthz, next to the URL's path)."""
        try:
            status, _ = self.request(None, "GET", urllib.parse.urljoin(self.path, "healthz"))
        except (OSError, http.client.HTTPException):
            return False
        return status == 200

    def request(self, body: bytes | None, method: str = "POST", path: str | None = None
                ) -> tuple[int, bytes]:
        """Send `body` (encoded JSON) and return (status, answer). If the server had closed the idle
        connection, the request is sent once more: asking twice for actions changes nothing."""
        reused = self._connection.sock is not None
        while True:
            try:
                # Refused before it was all sent (a 413 closes the connection): its answer says why.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._connection.request(method, path or self.path, body, JSON_HEADERS)
                response = self._connection.getresponse()
                return response.status, response.read()
            except BaseException as e:
                self._connection.close()  # a half-sent request or half-read answer spoils the next
                if reused and isinstance(e, ConnectionError):
                    reused = False  # once more, on a new connection
                    continue
                if isinstance(e, OSError | http.client.HTTPException):  # refused, timeout, DNS
                    raise ServerUnreachable(
                        f"cannot reach {self.address}{path or self.path} ({type(e).__name__}: {e}; "
                        f"timeout_s={self._connection.timeout}): is `rlcourse serve` running?"
                    ) from e
                raise

    def close(self) -> None:  # (the next request would open a new connection)
        self._connection.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()


def run_episode(client: Any, env: gym.Env, seed: int | None = None) -> float:
    """The production loop: the env runs here, acting through `client.compute_actions` (a
    PolicyClient, or an Algorithm in this process); returns the episode's return."""
    obs, _ = env.reset(seed=seed)
    total, done = 0.0, False
    while not done:
        action = client.compute_actions(np.asarray(obs)[None])[0]
        obs, reward, terminated, truncated, _ = env.step(action)
        total, done = total + float(reward), terminated or truncated
    return total


def _error_message(answer: bytes) -> str:
    """The server's `error` field, or the answer as text (an error from Serve's proxy)."""
    try:
        return str(json.loads(answer)["error"])
    except (ValueError, KeyError, TypeError):
        return answer.decode(errors="replace")[:500] or "(empty answer)"
