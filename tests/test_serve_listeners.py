"""The served policy's listeners: Serve's HTTP proxy on 127.0.0.1; the one listener Ray opens on
every interface, each replica's internal gRPC server (Ray Serve binds it to [::] and offers no
setting), refuses a caller without the cluster's token.

Run in a fresh process with its own HOME, so its Ray, its token and its environment are its own.
"""

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import grpc
import pytest
from helpers import kill_session, read_line

ROOT = Path(__file__).resolve().parents[1]

PROBE = textwrap.dedent("""
    import json, sys, time
    import psutil
    from rlcourse import PPOConfig
    from rlcourse.serve.app import policy_app, shutdown, start

    algo = (PPOConfig().environment("CartPole-v1").env_runners(num_env_runners=0)
            .rl_module(model_config={"fcnet_hiddens": [8]})).build_algo()
    checkpoint = algo.save_to_path(sys.argv[1])
    algo.stop()
    start(policy_app(checkpoint), port=int(sys.argv[2]))
    me = psutil.Process()
    listening = []
    for process in [me, *me.children(recursive=True)]:
        try:
            sockets = process.net_connections("inet")
            name = " ".join(process.cmdline())[:80]
        except psutil.NoSuchProcess:
            continue
        listening += [[name, s.laddr.ip, s.laddr.port] for s in sockets
                      if s.status == psutil.CONN_LISTEN]
    print(json.dumps(listening), flush=True)
    sys.stdin.readline()  # the test probes the listeners meanwhile
    shutdown()
""")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _is_loopback(ip: str) -> bool:
    return ip == "::1" or ip.removeprefix("::ffff:").startswith("127.")


@pytest.mark.timeout(300)
def test_serve_listens_on_loopback_but_for_token_guarded_replica_grpc(tmp_path):
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("RAY_") and key != "PYTHONPATH"}
    env.update(HOME=str(tmp_path), PYTHONPATH=str(ROOT))
    port = free_port()
    probe = subprocess.Popen([sys.executable, "-c", PROBE, str(tmp_path / "ckpt"), str(port)],
                             env=env, cwd=ROOT, text=True, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    try:
        line = read_line(probe, timeout_s=240)
        assert line, "the probe died or hung before serving"
        listening = json.loads(line)
        http = [ip for _, ip, p in listening if p == port]
        assert http and all(_is_loopback(ip) for ip in http), listening
        exposed = [(name, ip, p) for name, ip, p in listening if not _is_loopback(ip)]
        assert exposed, "expected the replica's gRPC server on [::]; if Ray now binds loopback, " \
                        "drop the exception from README.md"
        assert all("ServeReplica" in name for name, _, _ in exposed), exposed
        for _, _, replica_port in exposed:
            with grpc.insecure_channel(f"127.0.0.1:{replica_port}") as channel:
                call = channel.unary_unary("/ray.serve.ASGIService/HandleRequest")
                with pytest.raises(grpc.RpcError) as refused:
                    call(b"", timeout=30)
                assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED, refused.value
        probe.communicate(input="\n", timeout=120)
    finally:
        kill_session(probe)
