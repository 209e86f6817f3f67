"""The proxy's body limit, without Serve: an ASGI app behind BodyLimit, fed a 400 MB body chunk by
chunk. The limit reads no further than the chunk that passes it, answers 413 in the app's place
and tells the app the client left; a declared Content-Length past it never reaches the app; a body
within it, and an answer the app gave first, pass as they are. A body that stops arriving gets a
408 the same way, and a replica whose client left mid-body answers rather than raising."""

import asyncio
import json
from types import SimpleNamespace

import pytest
from ray.serve._private.http_util import validate_http_proxy_callback_return
from ray.serve._private.utils import call_function_from_import_path
from starlette.requests import ClientDisconnect

from rlcourse.serve import body_limit
from rlcourse.serve.app import PolicyDeployment
from rlcourse.serve.body_limit import PROXY_CALLBACK, BodyLimit
from rlcourse.serve.observations import MAX_BYTES

pytestmark = pytest.mark.timeout(60)
CHUNK = b" " * (1 << 18)  # 256 KiB


class Client:
    """`num_chunks` of CHUNK as ASGI receive messages (read counts them), and the answer sent."""

    def __init__(self, num_chunks: int):
        self.num_chunks = num_chunks
        self.read = 0
        self.sent: list[dict] = []

    async def receive(self) -> dict:
        self.read += 1
        if self.read > self.num_chunks:
            return {"type": "http.disconnect"}
        return {"type": "http.request", "body": CHUNK, "more_body": self.read < self.num_chunks}

    async def send(self, message: dict) -> None:
        self.sent.append(message)

    def answer(self) -> tuple[int, dict[bytes, bytes], dict]:
        start, *bodies = self.sent
        return (start["status"], dict(start["headers"]),
                json.loads(b"".join(m.get("body", b"") for m in bodies)))


async def reading_app(scope, receive, send, answer_first: bool = False) -> None:
    """Read the whole body (as Serve's proxy does), then answer how many bytes came, or 499."""
    if answer_first:
        await respond(send, 400, {"error": "refused at once"})
    received, message = 0, {"more_body": True}
    while message.get("more_body"):
        message = await receive()
        if message["type"] == "http.disconnect":
            reading_app.disconnected = True
            if not answer_first:
                await respond(send, 499, {"error": "client left"})
            return
        received += len(message["body"])
    await respond(send, 200, {"bytes": received})


async def respond(send, status: int, document: dict) -> None:
    await send({"type": "http.response.start", "status": status, "headers": []})
    await send({"type": "http.response.body", "body": json.dumps(document).encode()})


def run(client: Client, headers: list | None = None, answer_first: bool = False) -> None:
    reading_app.disconnected = False

    async def app(scope, receive, send):
        await reading_app(scope, receive, send, answer_first)

    scope = {"type": "http", "method": "POST", "path": "/", "headers": headers or []}
    asyncio.run(BodyLimit(app)(scope, client.receive, client.send))


def test_a_streamed_flood_is_refused_at_the_limit_and_the_app_told_the_client_left():
    client = Client(num_chunks=1600)  # 400 MB, chunked (no Content-Length)
    run(client, [(b"transfer-encoding", b"chunked")])
    status, headers, document = client.answer()
    assert status == 413 and headers[b"connection"] == b"close"
    assert f"at least {MAX_BYTES + len(CHUNK)} bytes, at most {MAX_BYTES}" in document["error"]
    assert client.read == MAX_BYTES // len(CHUNK) + 1  # not a chunk past the limit
    assert reading_app.disconnected and len(client.sent) == 2  # the app's 499 is not sent


def test_a_declared_size_past_the_limit_is_refused_before_the_app_or_the_body():
    client = Client(num_chunks=1600)
    run(client, [(b"content-length", str(1600 * len(CHUNK)).encode())])
    status, _, document = client.answer()
    assert status == 413 and f"is {1600 * len(CHUNK)} bytes" in document["error"]
    assert client.read == 0


@pytest.mark.parametrize("num_chunks", [1, MAX_BYTES // len(CHUNK)])
def test_a_body_within_the_limit_reaches_the_app_whole(num_chunks):
    client = Client(num_chunks)
    run(client, [(b"content-length", str(num_chunks * len(CHUNK)).encode())])
    assert client.answer() == (200, {}, {"bytes": num_chunks * len(CHUNK)})


def test_an_answer_the_app_gave_before_the_limit_is_the_one_sent():
    client = Client(num_chunks=1600)
    run(client, answer_first=True)
    assert client.answer() == (400, {}, {"error": "refused at once"})
    assert client.read == MAX_BYTES // len(CHUNK) + 1 and reading_app.disconnected


def test_serve_takes_the_proxy_callback_and_gets_the_limit():
    """As Serve's proxy calls it (configure_http_middlewares in ray/serve/_private/http_util.py)."""
    (middleware,) = validate_http_proxy_callback_return(call_function_from_import_path(PROXY_CALLBACK))
    assert middleware.cls is BodyLimit


class StalledClient(Client):
    """Sends two chunks of a longer body, then nothing more (a slow or stuck client)."""

    async def receive(self) -> dict:
        if self.read == 2:
            await asyncio.sleep(3600)
        return {**await super().receive(), "more_body": True}


def test_a_body_that_stops_arriving_gets_a_408_and_the_app_is_told_the_client_left(monkeypatch):
    monkeypatch.setattr(body_limit, "BODY_TIMEOUT_S", 0.2)
    client = StalledClient(num_chunks=4)
    run(client, [(b"content-length", str(4 * len(CHUNK)).encode())])
    status, headers, document = client.answer()
    assert status == 408 and headers[b"connection"] == b"close"
    assert f"not all in after 0.2 s ({2 * len(CHUNK)} bytes came)" in document["error"]
    assert reading_app.disconnected and len(client.sent) == 2  # the app's 499 is not sent


def test_a_client_that_leaves_mid_body_ends_the_replicas_call_with_an_answer_not_an_error():
    class Departed:  # a Starlette request whose client hung up after 10 of 100 bytes
        url, method, headers = SimpleNamespace(path="/"), "POST", {"content-length": "100"}

        async def stream(self):
            yield b'{"obs": [0'
            raise ClientDisconnect

    response = asyncio.run(PolicyDeployment.func_or_class.__call__(None, Departed()))
    assert response.status_code == 499 and b"left before its body was in" in response.body
