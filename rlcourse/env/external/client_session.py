"""One simulator's connection to its server runner, served on its own thread: a PING with the token
and protocol version first, then config, weights and episodes (or, with server-side inference,
observations answered with actions). Anything the protocol does not allow gets an ERROR message
back and the connection closes; other clients and the learner never see it."""

import contextlib
import hmac
import logging
import socket
from typing import TYPE_CHECKING

from rlcourse.env.external.episode_checks import episode_from_message
from rlcourse.env.external.rllink import (
    CLIENT_MESSAGES,
    PROTOCOL_VERSION,
    ProtocolError,
    receive_message,
    send_message,
)
from rlcourse.env.external.server_side_inference import ServerSideInference

if TYPE_CHECKING:
    from rlcourse.env.external.env_runner_server_for_external_inference import (
        EnvRunnerServerForExternalInference,
    )

logger = logging.getLogger(__name__)


def _handshake(sock: socket.socket, server: "EnvRunnerServerForExternalInference") -> None:
    """The first message must be PING with the shared token, then the same protocol version."""
    message = _receive(sock, server)
    if message["type"] != "PING":
        raise ProtocolError(f"the first message must be PING with 'token' and 'protocol_version', "
                            f"got {message['type']!r}.")
    token = message.get("token")
    if not isinstance(token, str) or not hmac.compare_digest(token.encode(), server.token.encode()):
        raise ProtocolError("wrong or missing token: pass the token the server's "
                            "RLCOURSE_EXTERNAL_TOKEN holds.")
    if message.get("protocol_version") != PROTOCOL_VERSION:
        raise ProtocolError(f"protocol version {message.get('protocol_version')!r} is not this "
                            f"server's ({PROTOCOL_VERSION}): use the client.py shipped with it.")
    _send(sock, server, {"type": "PONG", "protocol_version": PROTOCOL_VERSION})
    server.count("num_external_clients_connected")


def _receive(sock: socket.socket, server: "EnvRunnerServerForExternalInference") -> dict:
    message, size = receive_message(sock, server.max_message_bytes)
    server.wire_bytes += size
    return message


def _send(sock: socket.socket, server: "EnvRunnerServerForExternalInference", message: dict) -> None:
    server.wire_bytes += send_message(sock, message)


def _take_episodes(message: dict, server: "EnvRunnerServerForExternalInference") -> None:
    """Check every episode of an EPISODES message; queue them all, or none if one is bad."""
    episodes = message.get("episodes")
    if not isinstance(episodes, list):
        raise ProtocolError(f"{message['type']} needs 'episodes', a list of episodes.")
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
    sock.settimeout(1.0)
    while max_bytes > 0 and (chunk := sock.recv(min(max_bytes, 2**16))):
        max_bytes -= len(chunk)


def serve_client(sock: socket.socket, peer: str,
                 server: "EnvRunnerServerForExternalInference") -> None:
    """Answer one client's messages until it hangs up, stays silent for `client_timeout_s`, breaks
    the protocol (ERROR sent) or the server stops. A client's unsent episode is simply never seen."""
    sock.settimeout(server.client_timeout_s)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # each answer leaves at once
    try:
        _handshake(sock, server)
        version = -1  # of the weights this client holds
        inference = None  # with server-side inference: its episode in progress, dropped if it leaves
        while True:
            message = _receive(sock, server)
            kind = message["type"]
            if kind == "PING":
                _send(sock, server, {"type": "PONG", "protocol_version": PROTOCOL_VERSION})
            elif kind == "GET_CONFIG":
                _send(sock, server, server.config_message())
            elif kind in ("EPISODES", "EPISODES_AND_GET_STATE"):
                _take_episodes(message, server)
            elif kind in ("GET_ACTION", "END_EPISODE"):
                inference = inference or ServerSideInference(server)
                if answer := inference.answer(message):
                    _send(sock, server, answer)
            elif kind != "GET_STATE":
                raise ProtocolError(f"unknown message type {kind!r}; a client sends one of "
                                    f"{', '.join(CLIENT_MESSAGES)}.")
            if kind in ("GET_STATE", "EPISODES_AND_GET_STATE"):
                state, version = server.state_message(
                    version if kind == "EPISODES_AND_GET_STATE" else None)
                _send(sock, server, state)
    except ProtocolError as e:
        logger.warning("%s: refused client %s: %s", server.name, peer, e)
        server.count("num_external_messages_refused")
        with contextlib.suppress(OSError):  # (it may have hung up already)
            _send(sock, server, {"type": "ERROR", "message": str(e)})
            _drain(sock, server.max_message_bytes)
    except (OSError, ConnectionError) as e:  # socket.timeout is an OSError
        if not server.stopping:
            logger.info("%s: client %s left: %s", server.name, peer, e or type(e).__name__)
    finally:
        sock.close()
        server.client_left(sock)
