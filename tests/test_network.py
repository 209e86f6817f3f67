"""A local Ray started by the course listens on loopback only and keeps token authentication on.

Each check runs in a fresh Python process with its own HOME (so its Ray, its token file and its
environment are its own), and inspects the listening sockets of exactly that process and its
descendants: the GCS, raylet, agents and every worker, runners and data-parallel learners included.
"""

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PROBE = textwrap.dedent("""
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
    ray.shutdown()
    print(json.dumps({"listening": listening, "gcs": gcs,
                      "auth_mode": os.environ.get("RAY_AUTH_MODE")}))
""")

INTRUDER = textwrap.dedent("""
    import sys
    import ray
    from rlcourse.utils.resources import init_ray
    init_ray(address=sys.argv[1])  # joins at 127.0.0.1 (plain ray.init would not even find it)
    print("connected", flush=True)
    ray.shutdown()  # explicitly: once, a driver left to Ray's exit-time finalizers hung for 120 s
""")


def _run(code: str, env: dict[str, str], *args: str, timeout: float = 240):
    return subprocess.run([sys.executable, "-c", code, *args], env=env, cwd=ROOT, text=True,
                          capture_output=True, timeout=timeout)


def _fresh_env(home: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("RAY_") and key != "PYTHONPATH"}
    env.update(HOME=str(home), PYTHONPATH=str(ROOT))
    return env


def _is_loopback(ip: str) -> bool:
    return ip == "::1" or ip.removeprefix("::ffff:").startswith("127.")  # IPv4 as IPv6 too


@pytest.mark.timeout(300)
def test_local_ray_listens_on_loopback_only_and_keeps_its_token_private(tmp_path):
    result = _run(PROBE, _fresh_env(tmp_path))
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    names = {name for name, _, _ in report["listening"]}
    # The probe saw the whole Ray: its servers and the actors' workers (runner and learners).
    assert {"gcs_server", "raylet"} <= names and len(report["listening"]) >= 8, report
    exposed = [entry for entry in report["listening"] if not _is_loopback(entry[1])]
    assert not exposed, f"listening beyond loopback: {exposed}"
    assert report["gcs"].startswith("127.0.0.1:")
    assert report["auth_mode"] == "token"
    token = tmp_path / ".ray" / "auth_token"
    assert stat.S_IMODE(token.stat().st_mode) == 0o600


@pytest.mark.timeout(300)
def test_a_process_without_the_token_cannot_join(tmp_path):
    """Start a local Ray in one process, then try to join it from another with a wrong token."""
    env = _fresh_env(tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent("""
            import sys, ray
            from rlcourse.utils.resources import init_ray
            init_ray(num_cpus=1)
            print(ray.get_runtime_context().gcs_address, flush=True)
            sys.stdin.read()  # hold Ray until the test closes stdin
            ray.shutdown()
        """)], env=env, cwd=ROOT, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL)
    try:
        address = holder.stdout.readline().strip()
        assert address.startswith("127.0.0.1:"), address
        intruder_env = {**env, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "0" * 64}
        refused = _run(INTRUDER, intruder_env, address, timeout=120)
        assert refused.returncode != 0 and "connected" not in refused.stdout
        assert "authentication" in refused.stderr.lower(), refused.stderr[-2000:]
        welcome = _run(INTRUDER, {**env, "RAY_AUTH_MODE": "token"}, address, timeout=120)
        assert "connected" in welcome.stdout, welcome.stderr[-2000:]
    finally:
        holder.communicate(input="", timeout=60)
