"""The served policy's request checks, without Serve: what each bad 'obs' gets as an answer, for Box
and Discrete(n, start) observation spaces, and what good ones become."""

import warnings

import gymnasium as gym
import numpy as np
import pytest

from rlcourse.serve.observations import MAX_BYTES, MAX_ROWS, BadRequest, observations, parse_body

pytestmark = pytest.mark.timeout(60)
BOX = gym.spaces.Box(low=np.float32([-1, -np.inf]), high=np.float32([1, np.inf]), dtype=np.float32)
DISCRETE = gym.spaces.Discrete(5, start=10)
FRAMES = gym.spaces.Box(low=0, high=255, shape=(2,), dtype=np.uint8)


def test_one_observation_and_a_batch_become_batches_of_the_space_dtype():
    assert observations([0.5, 3.0], BOX).shape == (1, 2)
    batch = observations([[0.5, 3.0], [-1, 7]], BOX)
    assert batch.shape == (2, 2) and batch.dtype == np.float32
    assert observations(12, DISCRETE).tolist() == [12]
    assert observations([10, 14.0], DISCRETE).tolist() == [10, 14]
    assert observations([3, 255.0], FRAMES).tolist() == [[3, 255]]


@pytest.mark.parametrize("value, space, status, message", [
    ([0.5], BOX, 400, "shape (1,)"),
    ([[0.5, 1.0], [0.5]], BOX, 400, "ragged"),
    ([], BOX, 400, "empty batch"),
    ([], DISCRETE, 400, "empty batch"),
    ([0.0, float("nan")], BOX, 400, "NaN"),
    ([0.0, 1e300], BOX, 400, "beyond float32"),
    ([1.5, 0.0], BOX, 400, "row 0 element 0 is 1.5, outside"),
    ([None, 1.0], BOX, 400, "objects"),
    ([[0.0, 0.0]] * (MAX_ROWS + 1), BOX, 413, "split it"),
    (9, DISCRETE, 400, "9, outside Discrete(5, start=10): send 10..14"),
    ([10, 15], DISCRETE, 400, "row 1 is 15"),
    (10.5, DISCRETE, 400, "fractions"),
    ([[10], [11]], DISCRETE, 400, "shape (2, 1)"),
    ("10", DISCRETE, 400, "strings"),
    (1e300, DISCRETE, 400, "row 0 is 1e+300, outside"),  # not the int64 it would wrap to
    (2**63, DISCRETE, 400, "row 0 is 9223372036854775808, outside"),
    ([10, 10**30], DISCRETE, 400, "row 1 is 1e+30, outside"),  # not "objects": JSON allows it
    ([0.0, 10**400], BOX, 400, "beyond float64's range"),
    ([3.5, 7.0], FRAMES, 400, "fractions; observations of Box(0, 255, (2,), uint8) are integers"),
])
def test_each_bad_observation_is_refused_with_what_is_wrong(value, space, status, message):
    with pytest.raises(BadRequest) as refused, warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning from a cast on the way
        observations(value, space)
    assert refused.value.status == status and message in refused.value.message


@pytest.mark.parametrize("body, status, message", [
    (b"{", 400, "not valid JSON"), (b"\xff", 400, "not valid JSON"), (b"[1, 2]", 400, "no field 'obs'"),
    (b" " * (MAX_BYTES + 1), 413, "bytes"),
])
def test_bodies_that_are_not_a_request_are_refused(body, status, message):
    with pytest.raises(BadRequest) as refused:
        parse_body(body, BOX)
    assert refused.value.status == status and message in refused.value.message
