"""Serve's ingress modes side by side: the Python HTTP proxy (the course's default) against Ray
2.60's experimental direct ingress (the replica answers HTTP itself) and HAProxy in front of it.

Why: benchmarks/serve_load.py shows Serve's own per-request cost (proxy ~4 ms and replica ~3.5 ms of
CPU) as the limit, not the module. Each mode is a feature flag that every Ray process reads when it
starts, so each runs in a fresh child process with its own Ray. Same checkpoint, same load as
serve_load.py (`run_load`: N keep-alive client threads), batching on (32, 2 ms) and off, 1 and 16
observations per request. A line per mode names the listening sockets of its Ray processes that
were NOT on 127.0.0.1 (the course listens on loopback only).

    python benchmarks/serve_ingress.py [--requests 1000] [--port 8123] [--modes direct haproxy]

Measured twice (2026-11-24, shared 2-core machine, load average 1.8-2.0, 1,000 requests a row),
32 clients, batching on, 1 obs/request: proxy 215-219 actions/s, p99 210-213 ms, CPU ~4.1 ms/req
proxy + ~3.7 replica; direct ingress 1,462-1,755 actions/s (6.7-8.2x), p99 29-48 ms, 0.4-0.5
ms/req replica and no proxy work; HAProxy 1,179-1,890 (5.4-8.8x), p99 36-49 ms. 16 obs/request:
proxy 3,096-3,644, direct 19,298-21,406, HAProxy 20,974-26,715 actions/s. Skipping the Python proxy
also removes most of the replica's cost: the proxy-to-replica call is what Serve charges.
RAY_SERVE_THROUGHPUT_OPTIMIZED=1 with the proxy kept ("proxy-tuned") gave 0.9-1.4x: noise-level.

Not adopted in rlcourse/serve/, though it is much faster:
- both are feature flags every Ray process reads when it starts (the replica, the controller): they
  must be in the environment before Ray starts, and are silently off when the course joins a Ray
  that runs already;
- direct ingress gives each replica its own port from a range (30000-31000 unless set), not the
  caller's port: the proxy still starts and still listens there (the slow path), several replicas
  have several URLs and nothing balances them, and the port is known only to the controller;
- an ingress replica drains at least 30 s when stopped or replaced (serve.shutdown took 31.5 s and
  warned; RAY_SERVE_DIRECT_INGRESS_MIN_DRAINING_PERIOD_S, set to 2 s here, shortens it);
- HAProxy gives one URL on 127.0.0.1 but binds its stats and metrics ports on 0.0.0.0 (8404 and
  9101 unless set) and keeps its files under /tmp/haproxy-serve, shared by every user.
In every mode, the proxy's one included, the replica's inter-deployment gRPC server listens on all
interfaces (Ray 2.60 binds it to [::]:0): the table's last lines name it.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import psutil
from common import print_table

CLIENTS = (1, 8, 32)
ROWS = (1, 16)
CPU_KINDS = ("clients", "proxy", "replica", "ray")
MODES = ("proxy", "proxy-tuned", "direct", "haproxy")  # the first is the baseline
DI_PORTS = (18200, 18220)  # direct-ingress replica ports (Ray's default range is 30000-31000)


def mode_env(mode: str, port: int, tmp: str) -> dict[str, str]:
    """The environment a mode's Ray starts with."""
    env = dict(os.environ)
    if mode == "proxy":
        return env
    if mode == "proxy-tuned":  # Serve's documented bundle, keeping the proxy (it turns on DI)
        return {**env, "RAY_SERVE_THROUGHPUT_OPTIMIZED": "1", "RAY_SERVE_ENABLE_DIRECT_INGRESS": "0"}
    env.update(RAY_SERVE_ENABLE_DIRECT_INGRESS="1",
               RAY_SERVE_DIRECT_INGRESS_MIN_HTTP_PORT=str(DI_PORTS[0]),
               RAY_SERVE_DIRECT_INGRESS_MAX_HTTP_PORT=str(DI_PORTS[1]),
               RAY_SERVE_DIRECT_INGRESS_MIN_DRAINING_PERIOD_S="2")  # default 30 s per redeploy
    if mode == "haproxy":
        # Its stats (8404) and metrics (9101) ports and /tmp/haproxy-serve are fixed by default.
        env.update(RAY_SERVE_ENABLE_HA_PROXY="1", RAY_SERVE_HAPROXY_STATS_PORT=str(port + 1),
                   RAY_SERVE_HAPROXY_METRICS_PORT=str(port + 2),
                   **{f"RAY_SERVE_HAPROXY_{k}": f"{tmp}/{v}" for k, v in (
                       ("CONFIG_FILE_LOC", "haproxy.cfg"), ("SOCKET_PATH", "admin.sock"),
                       ("SERVER_STATE_BASE", ""), ("SERVER_STATE_FILE", "server-state"),
                       ("METRICS_SOCKET_PATH", "metrics.sock"))})
    return env


def listeners() -> list[tuple[str, str, int]]:
    """(process title, address, port) of every listening TCP socket of this process's children."""
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            title = child.cmdline()[0] if child.cmdline() else child.name()
            found += [(title, c.laddr.ip, c.laddr.port) for c in child.net_connections("tcp")
                      if c.status == psutil.CONN_LISTEN]
        except (psutil.NoSuchProcess, psutil.AccessDenied, IndexError):
            continue
    return found


def replica_port(timeout_s: float = 60) -> int:
    """The direct-ingress port of the one replica (waits while a replaced one still drains)."""
    deadline = time.monotonic() + timeout_s
    while True:
        ports = {p for t, _, p in listeners()
                 if "ServeReplica" in t and DI_PORTS[0] <= p <= DI_PORTS[1]}
        if len(ports) == 1 or time.monotonic() > deadline:
            return max(ports)
        time.sleep(0.5)


def child(mode: str, checkpoint: str, port: int, requests: int) -> None:
    """Serve `checkpoint` in this mode, load it, print one JSON line of rows."""
    import urllib.request

    from rlcourse.course.load_test import run_load
    from rlcourse.serve.app import deploy, policy_app, shutdown, start

    obs = np.random.default_rng(0).uniform(-0.3, 0.3, (requests + 16, 4)).astype(np.float32)
    rows, exposed = [], set()
    try:
        url = start(policy_app(checkpoint, max_batch_size=32), port)
        for batching in ("on", "off"):
            if batching == "off":
                deploy(policy_app(checkpoint, max_batch_size=1))
            if mode == "direct":  # the replica's own port, once the replaced replica has drained
                url = f"http://127.0.0.1:{replica_port()}/"
            exposed |= {f"{t.split('::')[-1]} {ip}:{p}" for t, ip, p in listeners()
                        if ip not in ("127.0.0.1", "::ffff:127.0.0.1")}
            assert json.loads(urllib.request.urlopen(url + "healthz", timeout=10).read()) == {
                "status": "ok"}
            run_load(url, 8, 200, obs)  # warm up
            for rows_per_request in ROWS:
                for n in CLIENTS:
                    r = run_load(url, n, requests, obs, rows_per_request)
                    rows.append({**r, "batching": batching, "rows": rows_per_request, "clients": n})
                    print(f"  {mode}, batching {batching}, {rows_per_request} obs/request, {n} "
                          f"clients: {r['actions_per_s']:,.0f} actions/s", file=sys.stderr,
                          flush=True)
    finally:
        shutdown()
    print(json.dumps({"rows": rows, "exposed": sorted(exposed)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000, help="requests per row")
    parser.add_argument("--port", type=int, default=8123)
    parser.add_argument("--modes", nargs="+", choices=MODES, default=MODES,
                        help="ingress modes to measure (proxy, the baseline, is always measured)")
    parser.add_argument("--child", nargs=2, metavar=("MODE", "CHECKPOINT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child[0], args.child[1], args.port, args.requests)
    from serve_load import make_checkpoint

    results, table = {}, []
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = make_checkpoint(tmp)
        for mode in ("proxy", *(m for m in args.modes if m != "proxy")):
            with tempfile.TemporaryDirectory() as mode_tmp:
                out = subprocess.run(
                    [sys.executable, __file__, "--requests", str(args.requests), "--port",
                     str(args.port), "--child", mode, checkpoint], env=mode_env(
                        mode, args.port, mode_tmp), stdout=subprocess.PIPE, text=True, check=True)
            results[mode] = json.loads(out.stdout.strip().splitlines()[-1])
    for mode, result in results.items():
        for r in result["rows"]:
            base = next(b for b in results["proxy"]["rows"] if (b["batching"], b["rows"],
                        b["clients"]) == (r["batching"], r["rows"], r["clients"]))
            table.append([mode, r["batching"], r["rows"], r["clients"], f"{r['actions_per_s']:,.0f}",
                          f"{r['actions_per_s'] / base['actions_per_s']:.2f}x", f"{r['p50']:.1f}",
                          f"{r['p99']:.1f}", r["failed"],
                          *(f"{r.get('cpu_' + k, 0):.2f}" for k in CPU_KINDS)])
    print_table("Serve's ingress modes, 1 replica on 127.0.0.1 (ray: Ray's processes, HAProxy's "
                "included)", ["ingress", "batching", "obs/req", "clients", "actions/s", "vs proxy",
                              "p50 ms", "p99 ms", "failed", *(f"CPU ms/req {k}" for k in CPU_KINDS)],
                table)
    for mode, result in results.items():
        on, off = ([r for r in result["rows"] if (r["batching"], r["rows"], r["clients"]) ==
                    (b, 1, 32)][0] for b in ("on", "off"))
        print(f"{mode}: batching's gain at 32 clients, 1 obs/request: "
              f"{on['actions_per_s'] / off['actions_per_s']:.2f}x; listening off loopback: "
              f"{', '.join(result['exposed']) or 'nothing'}")
    print(f"machine load average over the run: {psutil.getloadavg()[1]:.1f} on "
          f"{psutil.cpu_count()} CPUs (others' processes included)")


if __name__ == "__main__":
    main()
