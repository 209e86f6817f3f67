"""RLlink, the messages between an external simulator (the client) and its server EnvRunner, with
RLlib's names, and what an episode must be before it reaches a learner. The framing is client.py's
(a 4-byte length, then a JSON object with a "type"; arrays as {"dtype", "shape", "b64"}); never
pickle: a peer's message is data, it cannot make the other side run code.

Client -> server: PING (first, with "token" and "protocol_version"), GET_CONFIG, GET_STATE, EPISODES,
EPISODES_AND_GET_STATE; with server-side inference (server_side_inference.py) GET_ACTION and
END_EPISODE instead of the episodes. Server -> client: PONG, SET_CONFIG, SET_STATE, ACTION, ERROR
(then it hangs up)."""

import base64
import json
import math
import socket

import gymnasium as gym
import numpy as np

from rlcourse.env.external.client import HEADER, encode_array, frame, read_exactly
from rlcourse.env.external.client import PROTOCOL_VERSION as PROTOCOL_VERSION  # (re-exported)
from rlcourse.env.single_agent_episode import SingleAgentEpisode

CLIENT_MESSAGES = ("PING", "GET_CONFIG", "GET_STATE", "EPISODES", "EPISODES_AND_GET_STATE",
                   "GET_ACTION", "END_EPISODE")
MAX_MESSAGE_BYTES = 8 * 2**20  # default; env_config["max_message_bytes"] changes it
ARRAY_DTYPES = ("float32", "float64", "int64", "bool")  # what an array on the wire may be
EPISODE_FIELDS = {"obs", "actions", "rewards", "action_logp", "terminated", "truncated"}


class ProtocolError(ValueError):
    """A peer sent something the protocol does not allow; the message says what and how to fix it."""


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
    if not (isinstance(shape, list) and len(shape) <= 64
            and all(type(n) is int and n >= 0 for n in shape)):
        raise ProtocolError(f"{field}: shape must be a list of at most 64 non-negative ints (NumPy's "
                            f"limit), got {str(shape)[:80]}.")
    try:
        raw = base64.b64decode(value["b64"], validate=True)
    except (TypeError, ValueError):
        raise ProtocolError(f"{field}: 'b64' is not base64 text.") from None
    if len(raw) != math.prod(shape) * np.dtype(dtype).itemsize:  # exact: NumPy's prod overflows
        raise ProtocolError(f"{field}: {len(raw)} bytes do not hold a {dtype} array of shape "
                            f"{shape}.")
    try:
        return np.frombuffer(raw, dtype=dtype).reshape(shape)
    except ValueError as e:  # no bytes, but a dimension beyond int64 (as [2**70, 0])
        raise ProtocolError(f"{field}: NumPy cannot make an array of shape {shape} ({e}).") from None


def send_message(sock: socket.socket, message: dict) -> int:
    """Send one message; returns the bytes put on the wire (header included)."""
    data = frame(message)
    sock.sendall(data)
    return len(data)


def receive_message(sock: socket.socket, max_bytes: int = MAX_MESSAGE_BYTES) -> tuple[dict, int]:
    """One message and its size on the wire. ProtocolError for an oversized or malformed one (its
    body is not read: the connection is then out of step and must close); ConnectionError if the
    peer hung up; socket.timeout if it stayed silent."""
    (length,) = HEADER.unpack(read_exactly(sock, HEADER.size))
    if length > max_bytes:
        raise ProtocolError(f"a message of {length} bytes is over the limit of {max_bytes} "
                            "(max_message_bytes): send fewer episodes per message.")
    body = read_exactly(sock, length)
    try:
        message = json.loads(body, parse_constant=_refuse_constant, parse_int=_parse_int)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ProtocolError(f"the message is not UTF-8 JSON ({e}).") from None
    except RecursionError:  # json's parser recurses once per nested array or object
        raise ProtocolError("the message nests too deeply for Python's JSON parser: send the "
                            "protocol's messages, a few levels deep.") from None
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise ProtocolError('a message must be a JSON object with a "type" string.')
    return message, HEADER.size + length


def _refuse_constant(name: str) -> float:
    raise ProtocolError(f"the message holds {name}, which JSON does not allow: send finite numbers.")


def _parse_int(digits: str) -> int:
    """A JSON integer; ProtocolError past the digits int() converts (sys.get_int_max_str_digits())."""
    try:
        return int(digits)
    except ValueError:
        raise ProtocolError(f"the message holds an integer of {len(digits)} digits, more than "
                            "Python reads: send numbers of the sizes the protocol expects.") from None


def checked_array(data: dict, name: str, where: str, dtypes: tuple[str, ...], shape: tuple
                  ) -> np.ndarray:
    """Field `name` decoded, of one of `dtypes` and of `shape` (None: any length), finite."""
    values = decode_array(f"{where}.{name}", data.get(name))
    if values.dtype.name not in dtypes:
        raise ProtocolError(f"{where}.{name}: dtype {values.dtype.name}, expected one of {dtypes}.")
    if len(values.shape) != len(shape) or any(
            want is not None and got != want for got, want in zip(values.shape, shape, strict=True)):
        expected = tuple("T" if n is None else n for n in shape)
        raise ProtocolError(f"{where}.{name}: shape {values.shape}, expected {expected}.")
    if values.dtype.kind == "f" and not np.isfinite(values).all():
        at = int(np.argwhere(~np.isfinite(values))[0][0])
        raise ProtocolError(f"{where}.{name}: a NaN or infinite value at step {at}; NaN data "
                            "would make every weight NaN. Send finite numbers.")
    return values


def checked_ending(data: dict, where: str) -> tuple[bool, bool]:
    """(terminated, truncated) of a whole episode: exactly one of them true."""
    terminated, truncated = data.get("terminated"), data.get("truncated")
    if type(terminated) is not bool or type(truncated) is not bool or terminated == truncated:
        raise ProtocolError(f"{where}: send whole episodes only: exactly one of 'terminated' and "
                            f"'truncated' is true (got {terminated!r}, {truncated!r}).")
    return terminated, truncated


def episode_from_message(data: object, where: str, observation_space: gym.spaces.Box,
                         action_space: gym.Space, max_episode_steps: int) -> SingleAgentEpisode:
    """The SingleAgentEpisode in `data` (one entry of "episodes", named `where` in errors): whole,
    of 1 to `max_episode_steps` steps, its arrays of the spaces' shapes and finite."""
    if not isinstance(data, dict) or set(data) != EPISODE_FIELDS:
        keys = sorted(data) if isinstance(data, dict) else type(data).__name__
        raise ProtocolError(f"{where}: an episode is an object with exactly the fields "
                            f"{sorted(EPISODE_FIELDS)}, got {keys}.")
    terminated, truncated = checked_ending(data, where)
    rewards = checked_array(data, "rewards", where, ("float32", "float64"), (None,))
    t = len(rewards)
    if not 1 <= t <= max_episode_steps:
        raise ProtocolError(f"{where}: {t} steps; an episode has 1 to {max_episode_steps} "
                            "(max_episode_steps): truncate longer ones in the simulator.")
    obs = checked_array(data, "obs", where, ("float32",), (t + 1, *observation_space.shape))
    logp = checked_array(data, "action_logp", where, ("float32",), (t,))
    if isinstance(action_space, gym.spaces.Discrete):
        actions = checked_array(data, "actions", where, ("int64",), (t,))
        bad = np.flatnonzero((actions < 0) | (actions >= action_space.n))
        if len(bad) or (logp > 1e-5).any():
            what = (f"action {int(actions[bad[0]])} at step {int(bad[0])} is outside 0..."
                    f"{action_space.n - 1}" if len(bad) else "a log-probability is above 0")
            raise ProtocolError(f"{where}: {what} (send the module's action indices and their "
                                "log-probabilities, before adding the space's start).")
    else:
        actions = checked_array(data, "actions", where, ("float32",), (t, *action_space.shape))
    return SingleAgentEpisode(obs, actions, rewards.astype(np.float32), {"action_logp": logp},
                              is_terminated=terminated, is_truncated=truncated)
