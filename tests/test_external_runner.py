"""The server runner for external simulators, in this process (no Ray): whole episodes from
clients come out of sample() as from any runner; clients that die, hang, reconnect or crowd in."""

import contextlib
import json
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from external_helpers import episode as episode_entry
from external_helpers import episodes as episodes_message
from external_helpers import (
    external_config,
    handshake,
    made_up_weights,
    raw_connect,
    receive_raw,
    run_client_in_thread,
    send_raw,
    start_runner,
)

from rlcourse.env.env_runner import EnvRunner, SampleTimeoutError
from rlcourse.env.external import client, client_session
from rlcourse.env.external import env_runner_server_for_external_inference as server_module
from rlcourse.env.external.env_runner_server_for_external_inference import (
    EnvRunnerServerForExternalInference,
)
from rlcourse.utils.checkpoint_contents import config_from_json, config_to_json
from rlcourse.utils.checkpoints import CheckpointError
from rlcourse.utils.validation import ConfigError

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def runner():
    runner = start_runner(client_timeout_s=1.0)
    yield runner
    runner.stop()


def wait_until(condition, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_sample_returns_the_clients_whole_episodes_as_a_runner_does(runner):
    threads = [run_client_in_thread(runner, seed=i) for i in range(2)]
    episodes = runner.sample(num_timesteps=400)
    assert sum(map(len, episodes)) >= 400 and all(e.is_done for e in episodes)
    for episode in episodes:
        assert episode.observations.shape == (len(episode) + 1, 4)
        assert episode.observations.dtype == np.float32 and episode.actions.dtype == np.int64
        assert set(np.unique(episode.actions)) <= {0, 1}
        assert (episode.extra_model_outputs["action_logp"] <= 0).all()
    metrics = runner.get_metrics()
    assert metrics["num_env_steps_sampled"] == sum(map(len, episodes))
    assert metrics["episode_returns"] == [e.get_return() for e in episodes]
    assert runner.sample(num_episodes=3) and runner.wire_bytes > 0
    for thread in threads:
        thread.join(timeout=10)


def test_new_weights_reach_the_clients_with_their_next_answer(runner):
    seen = []
    run_client_in_thread(runner, max_env_steps=None, on_weights=seen.append)  # until stop()
    runner.sample(num_timesteps=50)
    runner.set_weights(made_up_weights(1))
    wait_until(lambda: seen[-1] == 1)  # EPISODES_AND_GET_STATE brought version 1
    assert seen[0] == 0


def test_a_client_killed_mid_message_leaves_nothing_behind_and_others_go_on(runner):
    sock = raw_connect(runner)
    handshake(sock)
    sock.sendall(b"\x00\x00\x10\x00" + b'{"type": "EPISODES", "episodes": [{"obs"')
    sock.close()
    wait_until(lambda: runner.num_clients == 0)
    assert runner._queued_steps == 0
    thread = run_client_in_thread(runner)
    assert all(e.is_done for e in runner.sample(num_timesteps=100))
    thread.join(timeout=10)


def test_a_silent_client_is_timed_out_and_can_reconnect(runner):
    sock = raw_connect(runner)
    handshake(sock)
    assert runner.num_clients == 1
    assert receive_raw(sock) is None  # hung up on after client_timeout_s=1 of silence
    wait_until(lambda: runner.num_clients == 0)
    sock = raw_connect(runner)
    handshake(sock)  # the same client, again
    sock.close()
    thread = run_client_in_thread(runner)
    assert runner.sample(num_timesteps=100)
    thread.join(timeout=10)


def test_more_clients_than_max_clients_are_told_so():
    runner = start_runner(max_clients=1, client_timeout_s=2.0)
    try:
        first = raw_connect(runner)
        handshake(first)
        second = raw_connect(runner)
        answer = receive_raw(second)
        assert answer["type"] == "ERROR" and "max_clients" in answer["message"]
        first.close()
        wait_until(lambda: runner.num_clients == 0)
        handshake(raw_connect(runner))  # room again
    finally:
        runner.stop()


def test_a_connection_that_never_sends_its_ping_soon_leaves_its_place(monkeypatch):
    monkeypatch.setattr(client_session, "PING_TIMEOUT_S", 0.3)
    runner = start_runner(max_clients=1)  # client_timeout_s: 60 s
    try:
        silent = raw_connect(runner)
        started = time.monotonic()
        assert receive_raw(silent) is None  # hung up on before client_timeout_s
        assert time.monotonic() - started < 20  # client_timeout_s would be 60 s
        wait_until(lambda: runner.num_clients == 0)
        handshake(raw_connect(runner))  # its place is free
    finally:
        runner.stop()


def test_a_refused_client_that_trickles_bytes_soon_leaves_its_place():
    runner = start_runner(max_clients=1)
    try:
        sock = raw_connect(runner)
        send_raw(sock, json.dumps({"type": "PING", "token": "guess",
                                   "protocol_version": client.PROTOCOL_VERSION}).encode())
        assert receive_raw(sock)["type"] == "ERROR"
        until = time.monotonic() + 2.5  # the server drains for a second in all, then hangs up
        with contextlib.suppress(OSError):
            while time.monotonic() < until:
                sock.sendall(b" ")  # a byte every 0.3 s: each read alone would wait less than 1 s
                time.sleep(0.3)
        wait_until(lambda: runner.num_clients == 0, timeout_s=0.5)
    finally:
        runner.stop()


def test_a_waiting_sample_keeps_more_steps_than_the_queue_holds_otherwise():
    """PPO asks a runner for train_batch_size / num_runners steps, which may pass max_queued_steps
    (4 * rollout_fragment_length = 80 here); with nobody waiting, the oldest episodes still go."""
    config = (external_config(max_episode_steps=50).env_runners(rollout_fragment_length=20)
              .training(train_batch_size_per_learner=400).env_runners(sample_timeout_s=5.0))
    config.validate()
    runner = EnvRunnerServerForExternalInference(config)
    runner.set_weights(made_up_weights())
    stop = threading.Event()

    def feed() -> None:  # one 50-step episode every 10 ms
        with contextlib.suppress(OSError):
            while not stop.is_set():
                send_raw(sock, episodes_message(episode_entry(t=50)))
                time.sleep(0.01)

    try:
        sock = raw_connect(runner)
        handshake(sock)
        send_raw(sock, episodes_message(*[episode_entry(t=50)] * 4))
        wait_until(lambda: runner.counts["num_external_env_steps_dropped"] == 100)  # 100 kept
        threading.Thread(target=feed, daemon=True).start()
        assert sum(map(len, runner.sample(num_timesteps=400))) >= 400
    finally:
        stop.set()
        runner.stop()


def test_stop_ends_a_client_thread_that_waits_for_new_weights(monkeypatch):
    ended = threading.Event()

    def serve_and_tell(*args) -> None:
        try:
            client_session.serve_client(*args)
        finally:
            ended.set()

    monkeypatch.setattr(server_module, "serve_client", serve_and_tell)
    runner = start_runner(client_timeout_s=20.0)  # it would wait 10 s for new weights
    try:
        run_client_in_thread(runner, max_env_steps=None)
        wait_until(lambda: runner._queued_steps > 0)  # its first batch is in: it waits
        time.sleep(0.2)
    finally:
        runner.stop()
    assert ended.wait(timeout=2.0)


def test_sample_without_clients_times_out_naming_the_port():
    config = external_config().env_runners(sample_timeout_s=0.3)
    runner = EnvRunnerServerForExternalInference(config)
    runner.set_weights(made_up_weights())
    try:
        with pytest.raises(SampleTimeoutError, match=f"{runner.address[1]}.*client.py"):
            runner.sample(num_timesteps=10)
    finally:
        runner.stop()


def test_stop_hangs_up_on_clients_and_frees_the_port(runner):
    sock = raw_connect(runner)
    handshake(sock)
    runner.stop()
    assert receive_raw(sock) is None
    with pytest.raises(OSError):
        socket.create_connection(runner.address, timeout=1.0)


def test_settings_are_checked(monkeypatch):
    with pytest.raises(ValueError, match="would be saved in checkpoints.*RLCOURSE_EXTERNAL_TOKEN"):
        EnvRunnerServerForExternalInference(external_config(token="in the config"))
    monkeypatch.delenv("RLCOURSE_EXTERNAL_TOKEN")
    with pytest.raises(ValueError, match="set the environment variable RLCOURSE_EXTERNAL_TOKEN"):
        EnvRunnerServerForExternalInference(external_config())
    monkeypatch.undo()
    with pytest.raises(ConfigError, match="env_runner_cls"):
        external_config().env_runners(env_runner_cls=dict).validate()
    half_written = type("HalfWritten", (EnvRunner,), {"stop": lambda self: None})
    with pytest.raises(ConfigError, match=r"env_runner_cls.*HalfWritten leaves EnvRunner's "
                                          r"_check_state, _initialize_weights, .*set_state unwritten"):
        external_config().env_runners(env_runner_cls=half_written).validate()
    with pytest.raises(ConfigError, match="observation_space and action_space"):
        external_config().environment(action_space=None).validate()
    taken = start_runner()
    try:
        with pytest.raises(OSError, match="cannot listen on .*pick a free base port"):
            start_runner(port=taken.address[1])
    finally:
        taken.stop()
    with pytest.raises(ConfigError, match="evaluation builds the env"):
        external_config().evaluation(evaluation_interval=1).validate()


def test_a_simulator_process_killed_mid_episode_is_forgotten_and_others_are_served(runner):
    simulator = subprocess.Popen(
        [sys.executable, client.__file__, "--port", str(runner.address[1]),
         "--steps-per-batch", "1000000"], stdout=subprocess.DEVNULL)  # never sends a batch
    try:
        wait_until(lambda: runner.num_clients == 1, timeout_s=20)
        time.sleep(0.2)  # stepping its simulator now
    finally:
        simulator.kill()
        simulator.wait(timeout=10)
    wait_until(lambda: runner.num_clients == 0)
    assert runner._queued_steps == 0  # its episode in progress never arrives
    thread = run_client_in_thread(runner)
    assert all(e.is_done for e in runner.sample(num_timesteps=100))
    thread.join(timeout=10)


def test_a_client_reconnects_to_a_restarted_runner_on_its_port(runner):
    thread = run_client_in_thread(runner, max_env_steps=400)
    assert runner.sample(num_timesteps=100)
    runner.stop()  # as a runner actor that Ray restarts: the same port, a new process
    restarted = start_runner(port=runner.address[1], client_timeout_s=1.0)
    try:
        assert all(e.is_done for e in restarted.sample(num_timesteps=100))
        thread.join(timeout=10)
        assert not thread.is_alive()
    finally:
        restarted.stop()


def test_a_checkpoint_keeps_the_spaces_and_the_runner_class():
    config = external_config()
    document = json.loads(json.dumps(config_to_json(config)))
    restored = config_from_json(document, "test")
    assert restored.env_runner_cls is EnvRunnerServerForExternalInference
    assert restored.observation_space == config.observation_space
    assert restored.action_space == config.action_space
    document["observation_space"]["low"] = "x"
    with pytest.raises(CheckpointError, match="observation_space is not a Box"):
        config_from_json(document, "test")


def test_its_state_is_its_step_count_and_a_bad_one_is_named(runner):
    state = runner.get_state()
    assert state == {"num_env_steps_lifetime": 0} and runner.check_state(state, "runner") is None
    for bad in ({"num_env_steps_lifetime": -1}, {"num_env_steps_lifetime": 1.5}, {}):
        assert "runner.num_env_steps_lifetime" in runner.check_state(bad, "runner")
    assert runner.check_state([], "runner") == "runner must be a dict."
    runner.set_state({"num_env_steps_lifetime": 7})
    assert runner.get_state() == {"num_env_steps_lifetime": 7}
