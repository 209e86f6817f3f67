"""RLlink, the messages between an external simulator (the client) and its server EnvRunner, with
RLlib's names. Each message is a 4-byte big-endian length, then that many bytes of UTF-8 JSON, an
object with a "type"; arrays travel as {"dtype", "shape", "b64"}. Never pickle: a peer's message is
data, it cannot make the other side run code. client.py carries its own copy of this framing (it
imports nothing of rlcourse); tests/test_external_client.py checks that the two agree.

Client -> server: PING (first, with "token" and "protocol_version"), GET_CONFIG, GET_STATE, EPISODES,
EPISODES_AND_GET_STATE; with server-side inference (server_side_inference.py) GET_ACTION and
END_EPISODE instead of the episodes. Server -> client: PONG, SET_CONFIG, SET_STATE, ACTION, ERROR
(then it hangs up).
"""

import base64
import json
import socket
import struct

import gymnasium as gym
import numpy as np

PROTOCOL_VERSION = 1
CLIENT_MESSAGES = ("PING", "GET_CONFIG", "GET_STATE", "EPISODES", "EPISODES_AND_GET_STATE",
                   "GET_ACTION", "END_EPISODE")
SERVER_MESSAGES = ("PONG", "SET_CONFIG", "SET_STATE", "ACTION", "ERROR")
MAX_MESSAGE_BYTES = 8 * 2**20  # default; env_config["max_message_bytes"] changes it
HEADER = struct.Struct("!I")
ARRAY_DTYPES = ("float32", "float64", "int64", "bool")  # what an array on the wire may be


class ProtocolError(ValueError):
    """A peer sent something the protocol does not allow; the message says what and how to fix it."""


def encode_array(values: np.ndarray) -> dict:
    """An array as JSON: its dtype, shape and raw bytes in base64 (exact, 4x smaller than text)."""
    values = np.ascontiguousarray(values)
    return {"dtype": values.dtype.name, "shape": list(values.shape),
            "b64": base64.b64encode(values.tobytes()).decode("ascii")}


def space_message(space: gym.Space) -> dict:
    """A Discrete or Box space as SET_CONFIG describes it to a client."""
    if isinstance(space, gym.spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    return {"type": "Box", "shape": list(space.shape), "low": encode_array(space.low),
            "high": encode_array(space.high)}


def decode_array(field: str, value: object) -> np.ndarray:
    """The array `encode_array` made; ProtocolError naming `field` for anything else."""
    if not isinstance(value, dict) or set(value) != {"dtype", "shape", "b64"}:
        raise ProtocolError(f"{field}: expected an array as {{'dtype', 'shape', 'b64'}}, got "
                            f"{str(value)[:80]!r}.")
    dtype, shape = value["dtype"], value["shape"]
    if dtype not in ARRAY_DTYPES:
        raise ProtocolError(f"{field}: dtype {dtype!r} is not one of {ARRAY_DTYPES}.")
    if not (isinstance(shape, list) and all(type(n) is int and n >= 0 for n in shape)):
        raise ProtocolError(f"{field}: shape must be a list of non-negative ints, got {shape!r}.")
    try:
        raw = base64.b64decode(value["b64"], validate=True)
    except (TypeError, ValueError):
        raise ProtocolError(f"{field}: 'b64' is not base64 text.") from None
    if len(raw) != int(np.prod(shape)) * np.dtype(dtype).itemsize:
        raise ProtocolError(f"{field}: {len(raw)} bytes do not hold a {dtype} array of shape "
                            f"{shape}.")
    return np.frombuffer(raw, dtype=dtype).reshape(shape)


def send_message(sock: socket.socket, message: dict) -> int:
    """Send one message; returns the bytes put on the wire (header included)."""
    body = json.dumps(message, separators=(",", ":"), allow_nan=False).encode()
    sock.sendall(HEADER.pack(len(body)) + body)
    return HEADER.size + len(body)


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = sock.recv(min(left, 2**20))
        if not chunk:
            raise ConnectionError("the peer closed the connection mid-message" if chunks or left < n
                                  else "the peer closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def receive_message(sock: socket.socket, max_bytes: int = MAX_MESSAGE_BYTES) -> tuple[dict, int]:
    """One message and its size on the wire. ProtocolError for an oversized or malformed one (its
    body is not read: the connection is then out of step and must close); ConnectionError if the
    peer hung up; socket.timeout if it stayed silent."""
    (length,) = HEADER.unpack(_read_exactly(sock, HEADER.size))
    if length > max_bytes:
        raise ProtocolError(f"a message of {length} bytes is over the limit of {max_bytes} "
                            "(max_message_bytes): send fewer episodes per message.")
    body = _read_exactly(sock, length)
    try:
        message = json.loads(body, parse_constant=_refuse_constant)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ProtocolError(f"the message is not UTF-8 JSON ({e}).") from None
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise ProtocolError('a message must be a JSON object with a "type" string.')
    return message, HEADER.size + length


def _refuse_constant(name: str) -> float:
    raise ProtocolError(f"the message holds {name}, which JSON does not allow: send finite numbers.")
