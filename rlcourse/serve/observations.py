"""A request's observations, checked before they reach the module: each mistake (bad JSON, shape,
dtype, NaN, values outside the space, an empty or huge batch) gets a 4xx naming the field and fix."""

import json
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from rlcourse.utils.observation_batch import observation_batch

MAX_ROWS = 1024  # observations in one request
MAX_BYTES = 1 << 20  # size of one request's body
EXAMPLE = 'send {"obs": [...]} (one observation) or {"obs": [[...], ...]} (a batch)'


@dataclass
class BadRequest(Exception):
    """A request the server refuses: its HTTP status (4xx) and what is wrong."""

    status: int
    message: str


async def read_body(request: Any) -> bytes:
    """A Starlette request's body, read chunk by chunk and refused once it passes MAX_BYTES: a
    chunked upload declares no size, and must not be held whole before it is refused."""
    try:
        check_size(int(request.headers.get("content-length") or 0))
    except ValueError:
        raise BadRequest(400, "the Content-Length header is not a number.") from None
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        check_size(len(body))
    return bytes(body)


def check_size(num_bytes: int) -> None:
    if num_bytes > MAX_BYTES:
        raise too_large(num_bytes)


def too_large(num_bytes: int, at_least: bool = False) -> BadRequest:
    """The 413 for a body of `num_bytes` (`at_least`: the bytes read so far of a longer one)."""
    size = f"at least {num_bytes}" if at_least else f"{num_bytes}"
    return BadRequest(413, f"the body is {size} bytes, at most {MAX_BYTES} are accepted: "
                           f"send at most {MAX_ROWS} observations per request.")


def parse_body(body: bytes, space: gym.Space) -> np.ndarray:
    """The batch of observations in a request body (one observation is a batch of one)."""
    check_size(len(body))
    try:
        document = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BadRequest(400, f"the body is not valid JSON ({e}): {EXAMPLE}.") from None
    except RecursionError:
        raise BadRequest(400, f"the JSON is nested too deeply: {EXAMPLE}.") from None
    except ValueError as e:  # an integer of more digits than Python converts
        raise BadRequest(400, f"the JSON holds a number too long to read ({e}): {EXAMPLE}.") from None
    if not isinstance(document, dict) or "obs" not in document:
        raise BadRequest(400, f"the JSON has no field 'obs': {EXAMPLE}.")
    return observations(document["obs"], space)


def observations(value: object, space: gym.Space) -> np.ndarray:
    """`value` (the 'obs' field) as a batch the module takes, checked against `space`."""
    try:
        batch = observation_batch(value, space, "field 'obs'", single=True)
    except ValueError as e:
        raise BadRequest(400, str(e)) from None
    if len(batch) > MAX_ROWS:
        raise BadRequest(413, f"field 'obs' holds {len(batch)} observations, at most {MAX_ROWS} "
                              "per request: split it into several requests.")
    return _discrete(batch, space) if isinstance(space, gym.spaces.Discrete) else _box(batch, space)


def _whole_numbers(batch: np.ndarray, space: gym.Space) -> None:
    if not np.all(batch == np.round(batch)):
        raise BadRequest(400, f"field 'obs' holds fractions; observations of {space} are integers.")


def _discrete(batch: np.ndarray, space: gym.spaces.Discrete) -> np.ndarray:
    _whole_numbers(batch, space)
    low, high = int(space.start), int(space.start + space.n - 1)
    outside = (batch < low) | (batch > high)  # before the cast to int64, which 1e300 would wrap
    if outside.any():
        raise BadRequest(400, f"field 'obs' row {int(np.argmax(outside))} is "
                              f"{batch[outside][0]}, outside {space}: send {low}..{high}.")
    return batch.astype(np.int64)


def _box(batch: np.ndarray, space: gym.spaces.Box) -> np.ndarray:
    with np.errstate(over="ignore"):  # too large for the dtype: inf, refused just below
        obs = batch.astype(space.dtype if np.issubdtype(space.dtype, np.floating) else np.float32)
    if not np.all(np.isfinite(obs)):
        raise BadRequest(400, f"field 'obs' holds values beyond {obs.dtype}'s range.")
    if not np.issubdtype(space.dtype, np.floating):  # e.g. uint8 frames
        _whole_numbers(obs, space)
    outside = ((obs < space.low) | (obs > space.high)).reshape(len(obs), -1)
    if outside.any():
        row, column = np.argwhere(outside)[0]
        raise BadRequest(400, f"field 'obs' row {row} element {column} is "
                              f"{obs.reshape(len(obs), -1)[row, column]:g}, outside the observation "
                              f"space [{space.low.flat[column]:g}, {space.high.flat[column]:g}].")
    return obs
