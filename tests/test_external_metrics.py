"""What server runners count reaches train()'s results under "env_runners" (clients connected,
episodes received, messages and episodes refused); the shared token, which runner actors get
from the driver's environment, is in no checkpoint; a runner Ray restarts serves its simulators."""

import json
import os
import random
import signal
import socket
from pathlib import Path

import pytest
import ray
from external_helpers import (
    TOKEN,
    client_processes,
    external_config,
    handshake,
    raw_connect,
    receive_raw,
    run_client_in_thread,
    send_raw,
    start_runner,
)

pytestmark = pytest.mark.timeout(60)


def test_the_runner_counts_clients_episodes_and_refusals_once():
    runner = start_runner(client_timeout_s=5.0)
    try:
        bad = raw_connect(runner)
        handshake(bad)
        send_raw(bad, json.dumps({"type": "EPISODES", "episodes": [{}, {}, {}]}).encode())
        assert receive_raw(bad)["type"] == "ERROR"
        thread = run_client_in_thread(runner, max_env_steps=200)
        episodes = runner.sample(num_timesteps=100)
        thread.join(timeout=10)
        first = runner.get_metrics()["custom_metrics"]
        second = runner.get_metrics()["custom_metrics"]
    finally:
        runner.stop()
    counted = {key: item["values"] for key, item in first.items()}
    assert counted["num_external_clients_connected"] == [2]  # the bad one passed the handshake
    assert counted["num_external_messages_refused"] == [1]
    assert counted["num_external_episodes_refused"] == [3]
    assert counted["num_external_episodes_received"][0] >= len(episodes)
    assert counted["num_external_env_steps_dropped"] == [0]
    assert {key: item["values"] for key, item in second.items()
            if key != "num_external_clients_per_runner"} == dict.fromkeys(
        [key for key in counted if key != "num_external_clients_per_runner"], [0.0])


def test_train_reports_the_counters_and_no_checkpoint_holds_the_token(ray_session, algo_factory,
                                                                     tmp_path):
    config = (external_config().env_runners(num_env_runners=1, num_cpus_per_env_runner=0.5)
              .training(train_batch_size_per_learner=200, minibatch_size=100, num_epochs=1))
    algo = algo_factory(config)
    [address] = algo.env_runner_group.foreach_env_runner(lambda runner: runner.address)
    thread = run_client_in_thread(type("Server", (), {"address": address}), max_env_steps=600)
    results = [algo.train()["env_runners"] for _ in range(2)]
    path = Path(algo.save_to_path(tmp_path / "checkpoint"))
    algo.stop()
    thread.join(timeout=20)
    assert results[0]["num_external_clients_connected"] == 1
    assert results[1]["num_external_clients_connected"] == 0
    assert results[1]["num_external_clients_connected_lifetime"] == 1
    assert results[1]["num_external_clients_per_runner"] == 1
    assert results[1]["num_external_episodes_received_lifetime"] >= results[1]["num_episodes_lifetime"]
    assert results[1]["num_external_messages_refused_lifetime"] == 0
    files = [f for f in path.rglob("*") if f.is_file()]
    assert files and not [f for f in files if TOKEN.encode() in f.read_bytes()]
    assert TOKEN not in repr(config.to_dict()) and TOKEN not in repr(results)


def free_base_port_below_the_ephemeral_range() -> int:
    """A base port whose runner 1 (base + 1) is free too, below Linux's ephemeral ports (32768+),
    which the simulator's own reconnect attempts could otherwise take (client.py refuses TCP's
    self-connect too)."""
    for base in random.Random().sample(range(20000, 32000, 2), 50):
        try:
            with socket.create_server(("127.0.0.1", base)), \
                    socket.create_server(("127.0.0.1", base + 1)):
                return base
        except OSError:
            continue
    raise RuntimeError("no two free ports in 20000-32000")


def test_a_runner_restarted_by_ray_serves_its_simulator_again(ray_session, algo_factory):
    """SIGKILL the server runner's process: Ray restarts it on the same port (a fixed base port;
    port 0 would pick another), the simulator reconnects, and training goes on."""
    base = free_base_port_below_the_ephemeral_range()
    config = (external_config(port=base)
              .env_runners(num_env_runners=1, num_cpus_per_env_runner=0.5)
              .training(train_batch_size_per_learner=200, minibatch_size=100, num_epochs=1))
    algo = algo_factory(config)
    with client_processes(algo, 100) as [simulator]:
        algo.train()
        [runner] = algo.env_runner_group.remote_env_runners
        os.kill(ray.get(runner.ping.remote()), signal.SIGKILL)
        for _ in range(10):
            result = algo.train()["env_runners"]
            if result["num_external_clients_connected_lifetime"] >= 2:
                break
        assert result["num_env_runner_restarts"] == 1, result
        assert result["num_external_clients_connected_lifetime"] == 2, result  # it came back
        assert result["num_env_steps_sampled"] >= 200 and simulator.poll() is None
