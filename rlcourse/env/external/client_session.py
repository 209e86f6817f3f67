"""One simulator's connection to its server runner, served on its own thread: PING with the token
first, then config, weights and episodes (or observations answered with actions). Anything the
protocol does not allow gets an ERROR back and the connection closes; nobody else sees it."""

import contextlib
import hmac
import logging
import socket
import time
from typing import TYPE_CHECKING

from rlcourse.env.external.rllink import (
    CLIENT_MESSAGES,
    PROTOCOL_VERSION,
    ProtocolError,
    episode_from_message,
    receive_message,
    send_message,
)
from rlcourse.env.external.server_side_inference import ServerSideInference

if TYPE_CHECKING:
    from rlcourse.env.external.env_runner_server_for_external_inference import (
        EnvRunnerServerForExternalInference,
    )

logger = logging.getLogger(__name__)
PONG = {"type": "PONG", "protocol_version": PROTOCOL_VERSION}
# How long a new connection may take to send its PING: one that sends nothing must not hold one of
# max_clients' places for all of client_timeout_s.
PING_TIMEOUT_S = 5.0


def serve_client(sock: socket.socket, peer: str,
                 server: "EnvRunnerServerForExternalInference") -> None:
    """Answer one client's messages until it hangs up, stays silent for `client_timeout_s` (or
    PING_TIMEOUT_S before its PING), breaks the protocol (ERROR sent) or the server stops. A
    client's unsent episode is simply never seen."""
    def send(message: dict) -> None:
        server.wire_bytes += send_message(sock, message)

    def receive() -> dict:
        message, size = receive_message(sock, server.max_message_bytes)
        server.wire_bytes += size
        return message

    sock.settimeout(min(PING_TIMEOUT_S, server.client_timeout_s))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # each answer leaves at once
    try:
        _check_ping(receive(), server.token)
        sock.settimeout(server.client_timeout_s)
        send(PONG)
        server.count("num_external_clients_connected")
        version = -1  # of the weights this client holds
        inference = None  # with server-side inference: its episode in progress, dropped if it leaves
        while True:
            message = receive()
            kind = message["type"]
            if kind == "PING":
                send(PONG)
            elif kind == "GET_CONFIG":
                send(server.config_message())
            elif kind in ("EPISODES", "EPISODES_AND_GET_STATE"):
                _take_episodes(message, server)
            elif kind in ("GET_ACTION", "END_EPISODE"):
                inference = inference or ServerSideInference(server)
                if answer := inference.answer(message):
                    send(answer)
            elif kind != "GET_STATE":
                raise ProtocolError(f"unknown message type {kind!r}; a client sends one of "
                                    f"{', '.join(CLIENT_MESSAGES)}.")
            if kind in ("GET_STATE", "EPISODES_AND_GET_STATE"):
                state, version = server.state_message(
                    version if kind == "EPISODES_AND_GET_STATE" else None)
                send(state)
    except ProtocolError as e:
        logger.warning("%s: refused client %s: %s", server.name, peer, e)
        server.count("num_external_messages_refused")
        with contextlib.suppress(OSError):  # (it may have hung up already)
            send({"type": "ERROR", "message": str(e)})
            _drain(sock, server.max_message_bytes)
    except (OSError, ConnectionError) as e:  # socket.timeout is an OSError
        if not server.stopping:
            logger.info("%s: client %s left: %s", server.name, peer, e or type(e).__name__)
    finally:
        sock.close()
        server.client_left(sock)


def _check_ping(message: dict, token: str) -> None:
    """The first message must be PING with the shared token, then the same protocol version."""
    if message["type"] != "PING":
        raise ProtocolError(f"the first message must be PING with 'token' and 'protocol_version', "
                            f"got {message['type']!r}.")
    sent = message.get("token")
    try:
        right = isinstance(sent, str) and hmac.compare_digest(sent.encode(), token.encode())
    except UnicodeEncodeError:  # JSON's "\ud800", a lone surrogate, is no UTF-8 text
        right = False
    if not right:
        raise ProtocolError("wrong or missing token: pass the token the server's "
                            "RLCOURSE_EXTERNAL_TOKEN holds.")
    if message.get("protocol_version") != PROTOCOL_VERSION:
        raise ProtocolError(f"protocol version {message.get('protocol_version')!r} is not this "
                            f"server's ({PROTOCOL_VERSION}): use the client.py shipped with it.")


def _take_episodes(message: dict, server: "EnvRunnerServerForExternalInference") -> None:
    """Check every episode of an EPISODES message; queue them all, or none if one is bad."""
    episodes = message.get("episodes")
    if not isinstance(episodes, list) or not episodes:
        raise ProtocolError(f"{message['type']} needs 'episodes', a list of at least one episode "
                            "(GET_STATE asks for the weights alone).")
    try:
        checked = [episode_from_message(data, f"episodes[{i}]", server.observation_space,
                                        server.action_space, server.max_episode_steps)
                   for i, data in enumerate(episodes)]
    except ProtocolError:
        server.count("num_external_episodes_refused", len(episodes))
        raise
    server.add_episodes(checked)


def _drain(sock: socket.socket, max_bytes: int) -> None:
    """Close our side, then read what the client still sends (for up to a second): closing with
    unread bytes would reset the connection and could destroy the ERROR before the client reads it."""
    sock.shutdown(socket.SHUT_WR)
    deadline = time.monotonic() + 1.0  # in all: a peer sending a byte now and then keeps no place
    while max_bytes > 0 and (left := deadline - time.monotonic()) > 0:
        sock.settimeout(left)
        if not (chunk := sock.recv(min(max_bytes, 2**16))):
            return
        max_bytes -= len(chunk)
