"""BodyLimit: an ASGI middleware in Serve's HTTP proxy that refuses a body past MAX_BYTES as it
streams in: the proxy queues a body as fast as it arrives (`proxy_asgi_receive` in Serve's
proxy.py), before any replica could check it. tests/test_serve.py measures memory under floods.
It also refuses a body that is not all in after BODY_TIMEOUT_S: slow clients would otherwise hold
the replica's places (max_ongoing_requests) while it waits on them."""

import asyncio
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.middleware import Middleware

from rlcourse.serve.observations import MAX_BYTES, too_large

# Serve's proxy wraps itself in the middlewares this function returns (configure_http_middlewares
# in ray/serve/_private/http_util.py).
PROXY_CALLBACK_ENV = "RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH"
PROXY_CALLBACK = "rlcourse.serve.body_limit.proxy_middlewares"
BODY_TIMEOUT_S = 10.0  # from the request's headers to its body's last byte

Message = MutableMapping[str, Any]
Send = Callable[[Message], Awaitable[None]]


def proxy_middlewares() -> list[Middleware]:
    """The middlewares of the course's proxy (PROXY_CALLBACK): the body limit."""
    return [Middleware(BodyLimit)]


class BodyLimit:
    """Refuse a request whose Content-Length, or body as it streams, passes MAX_BYTES (a 413), or
    whose body is not in after BODY_TIMEOUT_S (a 408): {"error": ...} in the app's place; the app
    is told the client left, so its replica call ends."""

    def __init__(self, app: Callable[..., Awaitable[None]]):
        self.app = app

    async def __call__(self, scope: Message, receive: Callable[[], Awaitable[Message]],
                       send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > MAX_BYTES:
            await _refuse(send, 413, too_large(int(declared)).message)
            return
        received, refused, started, done = 0, False, False, asyncio.Event()
        body_in, deadline = False, asyncio.get_running_loop().time() + BODY_TIMEOUT_S

        async def refuse(status: int, error: str) -> Message:
            nonlocal refused
            refused = True
            if started:  # the app answered already: let its answer end, then the socket
                await done.wait()
            else:
                await _refuse(send, status, error)
            return {"type": "http.disconnect"}

        async def limited_receive() -> Message:
            nonlocal received, body_in
            if refused or body_in:  # (after the body the proxy waits here for the client to leave)
                return {"type": "http.disconnect"} if refused else await receive()
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                return await refuse(408, f"the body was not all in after {BODY_TIMEOUT_S} s "
                                         f"({received} bytes came): send the whole request at once.")
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                body_in = not message.get("more_body", False)
                if received > MAX_BYTES:
                    return await refuse(413, too_large(received, not body_in).message)
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if refused and not started:
                return  # the 413 or 408 went out in the app's place
            started = True
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                done.set()

        await self.app(scope, limited_receive, guarded_send)


async def _refuse(send: Send, status: int, error: str) -> None:
    body = json.dumps({"error": error}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})
