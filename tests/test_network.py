"""A local Ray started by the course listens on loopback only and keeps token authentication on.

One fresh Python process with its own HOME (so its Ray, its token file and its environment are its
own) starts the course's Ray and trains one iteration; the first check inspects the listening
sockets of exactly that process and its descendants: the GCS, raylet, agents and every worker,
runners and data-parallel learners included. The same process then holds its Ray while the second
check tries to join it from other processes, with a wrong token and with the right one.
"""

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import kill_session, read_line

ROOT = Path(__file__).resolve().parents[1]

HOLDER = textwrap.dedent("""
    import json, os, sys, time
    import psutil, ray
    from rlcourse import PPOConfig
    from rlcourse.utils.resources import init_ray

    init_ray(num_cpus=2)
    config = (PPOConfig().environment("CartPole-v1")
              .env_runners(num_env_runners=1, num_envs_per_env_runner=2,
                           num_cpus_per_env_runner=0.25)
              .learners(num_learners=2, num_cpus_per_learner=0.25)
              .training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1))
    algo = config.build_algo()
    algo.train()  # the learners have joined torch.distributed; the runners have sampled
    me = psutil.Process()
    listening = []
    for process in [me, *me.children(recursive=True)]:
        try:
            sockets = process.net_connections("inet")
        except psutil.NoSuchProcess:
            continue
        listening += [[process.name(), s.laddr.ip, s.laddr.port] for s in sockets
                      if s.status == psutil.CONN_LISTEN]
    gcs = ray.get_runtime_context().gcs_address
    algo.stop()
    print(json.dumps({"listening": listening, "gcs": gcs,
                      "auth_mode": os.environ.get("RAY_AUTH_MODE")}), flush=True)
    sys.stdin.read()  # hold Ray until the test closes stdin
    ray.shutdown()
""")

INTRUDER = textwrap.dedent("""
    import sys
    import ray
    from rlcourse.utils.resources import init_ray
    init_ray(address=sys.argv[1])  # joins at 127.0.0.1 (plain ray.init would not even find it)
    print("connected", flush=True)
    ray.shutdown()  # explicitly: once, a driver left to Ray's exit-time finalizers hung for 120 s
""")


def _start(code: str, env: dict[str, str], *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code, *args], env=env, cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _finish(process: subprocess.Popen, timeout: float) -> subprocess.CompletedProcess:
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    finally:
        process.kill()  # a no-op once it has exited
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def _fresh_env(home: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("RAY_") and key != "PYTHONPATH"}
    env.update(HOME=str(home), PYTHONPATH=str(ROOT))
    return env


def _is_loopback(ip: str) -> bool:
    return ip == "::1" or ip.removeprefix("::ffff:").startswith("127.")  # IPv4 as IPv6 too


@pytest.fixture(scope="module")
def holder(tmp_path_factory):
    """The holder process, its HOME, its environment and its report; it must exit cleanly."""
    home = tmp_path_factory.mktemp("home")
    env = _fresh_env(home)
    with (home / "holder.err").open("w") as err:  # a file, not a pipe nobody drains
        process = subprocess.Popen([sys.executable, "-c", HOLDER], env=env, cwd=ROOT, text=True,
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                   start_new_session=True)
    try:
        line = read_line(process, timeout_s=240)
        assert line, (home / "holder.err").read_text()[-3000:]
        yield home, env, json.loads(line)
        process.communicate(input="", timeout=60)
    finally:
        kill_session(process)
    assert process.returncode == 0, (home / "holder.err").read_text()[-3000:]


@pytest.mark.timeout(300)
def test_local_ray_listens_on_loopback_only_and_keeps_its_token_private(holder):
    home, _, report = holder
    names = {name for name, _, _ in report["listening"]}
    # The holder saw the whole Ray: its servers and the actors' workers (runner and learners).
    assert {"gcs_server", "raylet"} <= names and len(report["listening"]) >= 8, report
    exposed = [entry for entry in report["listening"] if not _is_loopback(entry[1])]
    assert not exposed, f"listening beyond loopback: {exposed}"
    assert report["gcs"].startswith("127.0.0.1:")
    assert report["auth_mode"] == "token"
    token = home / ".ray" / "auth_token"
    assert stat.S_IMODE(token.stat().st_mode) == 0o600


@pytest.mark.timeout(300)
def test_a_process_without_the_token_cannot_join(holder):
    """Try to join the holder's Ray from two other processes, with a wrong token and the right one."""
    _, env, report = holder
    address = report["gcs"]
    assert address.startswith("127.0.0.1:"), address
    # Ray retries a refused connection once a second, 20 times by default: twice shows the refusal.
    intruder_env = {**env, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "0" * 64,
                    "RAY_NUM_REDIS_GET_RETRIES": "2"}
    # Both at once: neither depends on the other, and each spends seconds importing Ray.
    refusing = _start(INTRUDER, intruder_env, address)
    welcoming = _start(INTRUDER, {**env, "RAY_AUTH_MODE": "token"}, address)
    refused, welcome = _finish(refusing, timeout=120), _finish(welcoming, timeout=120)
    assert refused.returncode != 0 and "connected" not in refused.stdout
    assert "authentication" in refused.stderr.lower(), refused.stderr[-2000:]
    assert "connected" in welcome.stdout, welcome.stderr[-2000:]
