"""Bad input from a simulator: each gets an ERROR message naming what was wrong, the connection
closes, the runner keeps serving a good client beside it, and nothing bad is queued for a learner;
with server-side inference too (GET_ACTION, END_EPISODE), where an episode in progress is refused."""

import json

import numpy as np
import pytest
from external_helpers import (
    TOKEN,
    episode,
    episodes,
    external_config,
    handshake,
    raw_connect,
    receive_raw,
    run_client_in_thread,
    send_raw,
    start_runner,
)

from rlcourse.env.external.client import PROTOCOL_VERSION, encode_array
from rlcourse.utils.validation import ConfigError

pytestmark = pytest.mark.timeout(30)
MAX_BYTES = 100_000


def server_side(kind: str = "GET_ACTION", obs: np.ndarray | None = None, **fields) -> bytes:
    """A server-side inference message with a good CartPole observation unless `obs` is given."""
    obs = np.zeros(4, np.float32) if obs is None else obs
    return json.dumps({"type": kind, "obs": encode_array(obs), **fields}).encode()


PING = {"type": "PING", "token": TOKEN, "protocol_version": PROTOCOL_VERSION}
BEFORE_HANDSHAKE = {  # name: (body, words the ERROR message must hold)
    "malformed JSON": (b'{"type": "PING", "token": ', "not UTF-8 JSON"),
    "not an object": (b"[1, 2]", "JSON object"),
    "missing token": (json.dumps({**PING, "token": None}).encode(), "token"),
    "wrong token": (json.dumps({**PING, "token": "guess"}).encode(), "token"),
    "episodes before PING": (episodes(episode()), "first message must be PING"),
    "another protocol version": (json.dumps({**PING, "protocol_version": 99}).encode(),
                                 "protocol version 99"),
    "a token that is no UTF-8 text": (json.dumps({**PING, "token": "\ud800"}).encode(), "token"),
    "JSON nested 40,000 deep": (b'{"type": "PING", "x": ' + b"[" * 40_000 + b"]" * 40_000 + b"}",
                                "nests too deeply"),
    "an integer of 5,000 digits": (b'{"type": "PING", "protocol_version": ' + b"9" * 5000 + b"}",
                                   "an integer of 5000 digits"),
}
AFTER_HANDSHAKE = {
    "unknown message type": (b'{"type": "GET_WEATHER"}', "unknown message type 'GET_WEATHER'"),
    "NaN in JSON": (b'{"type": "EPISODES", "episodes": [NaN]}', "NaN"),
    "oversized message": (b" " * (MAX_BYTES + 1), "over the limit"),
    "episodes not a list": (b'{"type": "EPISODES", "episodes": 3}', "'episodes', a list"),
    "no episodes": (b'{"type": "EPISODES_AND_GET_STATE", "episodes": []}', "at least one episode"),
    "missing field": (episodes({k: v for k, v in episode().items() if k != "rewards"}), "fields"),
    "observation of the wrong shape": (episodes(episode(obs=np.zeros((6, 5), np.float32))),
                                       "obs: shape (6, 5), expected (6, 4)"),
    "observation of the wrong dtype": (episodes(episode(obs=np.zeros((6, 4), np.float64))),
                                       "obs: dtype float64"),
    "NaN reward": (episodes(episode(rewards=np.array([1, 1, np.nan, 1, 1], np.float32))),
                   "rewards: a NaN or infinite value at step 2"),
    "infinite observation": (episodes(episode(obs=np.full((6, 4), np.inf, np.float32))), "obs"),
    "action outside the action space": (episodes(episode(actions=np.array([0, 1, 2, 0, 1]))),
                                        "action 2 at step 2 is outside"),
    "negative action": (episodes(episode(actions=np.array([0, -1, 0, 0, 1]))), "action -1"),
    "partial episode": (episodes(episode(terminated=False)), "whole episodes only"),
    "too long an episode": (episodes(episode(t=51)), "max_episode_steps"),
    "bad base64": (episodes(episode(obs={"dtype": "float32", "shape": [6, 4], "b64": "!!"})),
                   "not base64"),
    "bytes that do not fit the shape": (
        episodes(episode(obs={**encode_array(np.zeros((6, 4), np.float32)), "shape": [7, 4]})),
        "do not hold"),
    "a shape of more elements than int64 counts": (  # NumPy's product would wrap to 0 bytes
        episodes(episode(obs={"dtype": "float32", "shape": [2**32, 2**32], "b64": ""})),
        "obs: 0 bytes do not hold"),
    "a shape beyond NumPy's int64": (
        episodes(episode(obs={"dtype": "float32", "shape": [2**70, 0], "b64": ""})),
        "obs: NumPy cannot make an array of shape [1180591620717411303424, 0]"),
    "a shape of 65 dimensions": (episodes(episode(obs={**encode_array(np.zeros(1, np.float32)),
                                                       "shape": [1] * 65})), "at most 64"),
    "a good episode beside a bad one": (
        episodes(episode(), episode(rewards=np.full(5, np.nan, np.float32))), "episodes[1]"),
}
SERVER_SIDE = {
    "GET_ACTION without an observation": (b'{"type": "GET_ACTION"}', "GET_ACTION.obs: expected"),
    "GET_ACTION's observation of the wrong shape": (server_side(obs=np.zeros(5, np.float32)),
                                                    "GET_ACTION.obs: shape (5,), expected (4,)"),
    "GET_ACTION's observation of the wrong dtype": (server_side(obs=np.zeros(4)),
                                                    "GET_ACTION.obs: dtype float64"),
    "GET_ACTION's infinite observation": (server_side(obs=np.full(4, np.inf, np.float32)),
                                          "GET_ACTION.obs: a NaN or infinite value"),
    "a reward before the first action": (server_side(reward=1.0), "first GET_ACTION has no reward"),
    "GET_ACTION with an unknown field": (server_side(rewards=1.0), "unknown fields ['rewards']"),
    "END_EPISODE before any action": (server_side("END_EPISODE", reward=1.0, terminated=True,
                                                  truncated=False), "END_EPISODE without"),
}
MID_EPISODE = {  # after one good GET_ACTION: the episode in progress is refused
    "an observation of the wrong shape mid-episode": (
        server_side(obs=np.zeros((2, 2), np.float32), reward=1.0),
        "GET_ACTION.obs: shape (2, 2), expected (4,)"),
    "no reward for the last action": (server_side(), "GET_ACTION.reward: expected a finite number"),
    "an infinite reward": (server_side(reward=1.0).replace(b'"reward": 1.0', b'"reward": 1e999'),
                           "GET_ACTION.reward"),  # JSON reads 1e999 as infinity
    "a reward beyond float's range": (server_side(reward=10**400),
                                      "GET_ACTION.reward: expected a finite number"),
    "an episode's end neither terminated nor truncated": (
        server_side("END_EPISODE", reward=1.0, terminated=False, truncated=False),
        "whole episodes only"),
    "END_EPISODE without its reward": (
        server_side("END_EPISODE", terminated=True, truncated=False), "END_EPISODE.reward"),
}


@pytest.fixture(scope="module")
def runner():
    runner = start_runner(client_timeout_s=5.0, max_message_bytes=MAX_BYTES, max_episode_steps=50)
    yield runner
    runner.stop()


@pytest.mark.parametrize("name", [*BEFORE_HANDSHAKE, *AFTER_HANDSHAKE, *SERVER_SIDE, *MID_EPISODE])
def test_bad_input_gets_an_error_and_harms_no_one(runner, name):
    server_side_case = name in SERVER_SIDE or name in MID_EPISODE
    good = run_client_in_thread(runner, max_env_steps=150,  # served while the bad one is refused
                                inference="server" if server_side_case else "client")
    before = dict(runner.counts)
    sock = raw_connect(runner)
    if name not in BEFORE_HANDSHAKE:
        handshake(sock)
    if name in MID_EPISODE:
        send_raw(sock, server_side())
        assert receive_raw(sock)["type"] == "ACTION"
    body, words = {**BEFORE_HANDSHAKE, **AFTER_HANDSHAKE, **SERVER_SIDE, **MID_EPISODE}[name]
    send_raw(sock, body)
    answer = receive_raw(sock)
    assert answer["type"] == "ERROR" and words in answer["message"], answer
    assert receive_raw(sock) is None  # then it hangs up
    sock.close()
    assert runner.counts["num_external_messages_refused"] == before["num_external_messages_refused"] + 1
    if server_side_case:  # the episode in progress is refused; there is none before an action
        assert (runner.counts["num_external_episodes_refused"]
                == before["num_external_episodes_refused"] + (name in MID_EPISODE))
    queued = runner.sample(num_timesteps=150)  # what a learner gets: only the good client's
    good.join(timeout=20)
    queued += list(runner._queue)
    assert queued and all(len(e) != 5 for e in queued), "an episode of the bad message got through"
    for e in queued:
        assert np.isfinite(e.rewards).all() and np.isfinite(e.observations).all()
    runner._queue.clear()
    runner._queued_steps = 0


@pytest.mark.parametrize("env_config, message", [
    ({"max_episode_step": 50}, r"reads no \['max_episode_step'\]; its settings are .*'max_episode_s"),
    ({"max_clients": "eight"}, r"env_config\['max_clients'\]='eight': use a whole number >= 1"),
    ({"max_clients": 0}, r"env_config\['max_clients'\]=0"),
    ({"client_timeout_s": 0}, r"env_config\['client_timeout_s'\]=0: use seconds, a finite number"),
    ({"max_episode_steps": 0}, r"env_config\['max_episode_steps'\]=0"),
    ({"max_message_bytes": -1}, r"env_config\['max_message_bytes'\]=-1: use bytes, >= 1024"),
    ({"port": 70000}, r"env_config\['port'\]=70000: use a TCP port in 0..65535"),
    ({"host": None}, r"env_config\['host'\]=None"),
])
def test_server_settings_are_checked_at_validate_naming_the_key(env_config, message):
    """Each was taken (a typo ignored, 0 s of timeout dropping every client) or failed in the
    runner actor naming no setting."""
    with pytest.raises(ConfigError, match=r"env_config=.*" + message):
        external_config(**env_config).validate()
