"""LocalCluster: a Ray cluster of several nodes on one machine, started with `ray start` as on real ones.

A real cluster runs `ray start --head` on one machine and `ray start --address=<head>` on every other
one. `LocalCluster` runs the same commands here: each node is one `ray start --block` process (the
node's raylet and Ray's other processes are its children; Ray's CLI is run through ray_cli.py, which
keeps Ray Serve out of it) with its own CPUs, a custom resource named
after the node, its own temp dir and ports. Everything listens on 127.0.0.1 only, the dashboard too,
and Ray's token authentication is on: a job or driver without the token is refused (see
rlcourse/utils/local_ray.py).

    with LocalCluster(num_workers=1) as cluster:    # nodes "head" and "worker-1"
        cluster.connect()                            # this process becomes the cluster's driver
        cluster.stop_node("worker-1")                # that node's processes only, like `ray stop` there

Teardown happens in three ways: `shutdown()` (also when the `with` block ends, even on an error), a
finalizer when the object is garbage collected or Python exits, and the kernel's own: each `ray start`
process is killed when the process that started it dies (even by SIGKILL), and a node's processes
follow their `ray start` (Ray's agents within a minute). `stop_node` and `shutdown` then check that no
process of the node is left: they find them by session (see rlcourse/course/node_processes.py),
never by name.
"""

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Callable
from pathlib import Path

import psutil
import ray

from rlcourse.course.node_processes import (
    NODE_MARK,
    Node,
    die_with_parent,
    node_processes,
    stop_node_processes,
)
from rlcourse.utils.local_ray import LOOPBACK, NODE_TIMED_OUT, enable_token_auth
from rlcourse.utils.resources import init_ray

START_TIMEOUT_S = 180.0
# Runs `ray ...` of this interpreter's environment, without loading Ray Serve (see ray_cli.py).
RAY_CLI = [sys.executable, "-m", "rlcourse.course.ray_cli"]


class NodeStartTimedOut(RuntimeError):
    """A node's `ray start` gave up: its raylet missed Ray's fixed 30 s registration wait."""


class LocalCluster:
    """Starts a head node and `num_workers` worker nodes ("worker-1", ...); see the module docstring.

    Each node gets `--num-cpus` logical CPUs (the head `head_cpus`, each worker `worker_cpus`), one
    unit of a custom resource named after it (e.g. {"worker-1": 1}, to pin actors to it), and an
    object store of `object_store_mb` MB. The head also runs the dashboard (Ray Jobs need it).
    """

    def __init__(self, num_workers: int = 1, head_cpus: int = 1, worker_cpus: int = 1,
                 object_store_mb: int = 150, verbose: bool = True):
        self.object_store_mb, self.verbose = object_store_mb, verbose
        # Short paths: Ray's Unix sockets live under the temp dirs, and must stay under 108 bytes.
        self.temp_root = Path(tempfile.mkdtemp(prefix="rlc-", dir="/tmp"))
        self.port, self.dashboard_port = _free_port(), _free_port()
        self.address = f"{LOOPBACK}:{self.port}"
        self.dashboard_url = f"http://{LOOPBACK}:{self.dashboard_port}"
        self.nodes: dict[str, Node] = {}
        enable_token_auth()  # the nodes, this driver and Ray Jobs read the same token file
        self._finalizer = weakref.finalize(self, _teardown, self.nodes, self.temp_root,
                                           self.address)
        try:
            self._start_again_if_slow(lambda: self._start(num_workers, head_cpus, worker_cpus))
        except BaseException:
            self.shutdown()
            raise

    def _start(self, num_workers: int, head_cpus: int, worker_cpus: int) -> None:
        head = self._launch("head", head_cpus)
        _wait_for_port(head, self.port)  # workers can join once the head's GCS answers
        workers = [self._launch(self._next_worker_name(), worker_cpus) for _ in range(num_workers)]
        for node in (head, *workers):
            self._wait_for_start(node)

    def _start_again_if_slow(self, start: Callable[[], None]) -> None:
        """Run `start`; should a node miss Ray's fixed 30 s registration wait (a busy machine), stop
        every node `start` launched and run it once more, as init_ray does for a local Ray."""
        before = set(self.nodes)
        try:
            start()
        except NodeStartTimedOut:
            again = sorted(set(self.nodes) - before)
            print(f"A node missed Ray's 30 s start-up wait (is the machine busy?): starting {again} "
                  "once more", file=sys.stderr, flush=True)
            for name in again:
                stop_node_processes(self.nodes.pop(name), graceful=False)
                shutil.rmtree(self.temp_root / name, ignore_errors=True)
            start()

    # -- nodes ------------------------------------------------------------------------------

    def add_worker(self, num_cpus: int = 1, name: str | None = None) -> str:
        """Start a worker node that joins the head (`ray start --address=...`); return its name."""
        name = name or self._next_worker_name()
        self._start_again_if_slow(lambda: self._wait_for_start(self._launch(name, num_cpus)))
        if _is_driver_of(self.address):
            _wait_for_alive_nodes(self.alive_nodes())
        return name

    def _next_worker_name(self) -> str:
        return f"worker-{sum(name != 'head' for name in self.nodes) + 1}"

    def _launch(self, name: str, num_cpus: int) -> Node:
        """Start `ray start --block` for one node (without waiting for it)."""
        if name in self.nodes:
            raise ValueError(f"This cluster already has a node named {name!r}.")
        head = name == "head"
        temp_dir = self.temp_root / name
        args = ["start", "--block", f"--node-ip-address={LOOPBACK}",
                f"--node-name={name}", f"--num-cpus={num_cpus}",
                f"--resources={json.dumps({name: 1})}",
                f"--object-store-memory={self.object_store_mb * 1024 * 1024}",
                f"--temp-dir={temp_dir}", f"--dashboard-agent-listen-port={_free_port()}",
                "--min-worker-port=0", "--max-worker-port=0", "--disable-usage-stats"]
        if head:  # no autoscaler: this cluster's nodes are started by hand, as here
            args += ["--head", f"--port={self.port}", "--include-dashboard=true",
                     f"--dashboard-host={LOOPBACK}", f"--dashboard-port={self.dashboard_port}",
                     "--no-monitor"]
        else:
            args += [f"--address={self.address}"]
        temp_dir.mkdir(parents=True)
        mark, log_path = f"{self.temp_root.name}/{name}", temp_dir.with_suffix(".log")
        with open(log_path, "w") as log:  # the child writes to its own copy of the file
            process = subprocess.Popen([*RAY_CLI, *args], stdin=subprocess.DEVNULL, stdout=log,
                                       stderr=subprocess.STDOUT, env=self._node_env(mark, head),
                                       start_new_session=True, preexec_fn=die_with_parent)
        self.nodes[name] = Node(name, num_cpus, mark, log_path, process, command=["ray", *args])
        return self.nodes[name]

    def _wait_for_start(self, node: Node) -> None:
        """Wait until `ray start` reports the node running; raise with its log if it fails."""
        deadline = node.launched_at + START_TIMEOUT_S
        while "Ray runtime started." not in node.log_path.read_text():
            if not node.is_running or time.monotonic() > deadline:
                log = node.log_path.read_text()
                error = NodeStartTimedOut if NODE_TIMED_OUT in log else RuntimeError
                tail = "\n".join(log.splitlines()[-20:])
                raise error(f"Node {node.name!r} did not start; the end of its log:\n{tail}")
            time.sleep(0.2)
        if self.verbose:
            print(f"node {node.name!r} started in {time.monotonic() - node.launched_at:.1f} s: "
                  f"{node.num_cpus} CPU, resource {{{node.name!r}: 1}}, pid {node.process.pid}",
                  flush=True)

    def _node_env(self, mark: str, head: bool) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items()
               if key != "RAY_ADDRESS"}  # RAY_AUTH_MODE=token included: see enable_token_auth
        env.update({
            NODE_MARK: mark,
            # Ray Jobs run `python ...`: make that the python of this environment.
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "RAY_START_HOOK": "rlcourse.utils.local_ray.loopback_start_hook",
            "RAY_USAGE_STATS_ENABLED": "0",
            # On SIGTERM, stop at once (Ray's default first waits up to 30 s for the node to drain).
            "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0",
            "DASHBOARD_METRIC_PORT": str(_free_port()),  # default 44227, shared machine-wide
        })
        if head:
            # Ray's single-machine mode (its default on macOS): every process started on the head,
            # e.g. a Ray Job's driver, keeps 127.0.0.1 as the node's address.
            env["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
        return env

    def stop_node(self, name: str, graceful: bool = True) -> None:
        """Stop one node and every process of it, and no other process (unlike `ray stop`).

        graceful=True sends SIGTERM to its `ray start`, which stops the node's processes the way
        `ray stop` on that machine would: the raylet tells the head it is leaving, so its actors are
        restarted elsewhere at once. graceful=False SIGKILLs them all, like a machine losing power:
        the head notices only when the node misses its health checks (about 15 s).
        """
        stop_node_processes(self.nodes[name], graceful)
        if self.verbose:
            print(f"node {name!r} stopped", flush=True)

    def alive_nodes(self) -> list[str]:
        """Names of the nodes whose `ray start` process is running."""
        return [name for name, node in self.nodes.items() if node.is_running]

    def processes(self, name: str | None = None) -> list[psutil.Process]:
        """Every running process of the cluster (or of node `name`): Ray's, actors', jobs'."""
        return node_processes([self.nodes[name]] if name else list(self.nodes.values()))

    # -- the driver -------------------------------------------------------------------------

    def connect(self) -> None:
        """Make this process the cluster's driver (it leaves any other Ray it is connected to)."""
        if ray.is_initialized() and not _is_driver_of(self.address):
            ray.shutdown()
        init_ray(address=self.address)
        _wait_for_alive_nodes(self.alive_nodes())

    # -- life cycle -------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Disconnect this process if it is the driver, stop every node, delete the temp dirs."""
        self._finalizer()

    def __enter__(self) -> "LocalCluster":
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()


# -- helpers (module-level, so that the finalizer holds no reference to the cluster) ---------------


def _is_driver_of(address: str) -> bool:
    return ray.is_initialized() and ray.get_runtime_context().gcs_address == address


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def _wait_for_port(node: Node, port: int) -> None:
    deadline = node.launched_at + START_TIMEOUT_S
    while node.is_running and time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection((LOOPBACK, port), timeout=1):
            return
        time.sleep(0.2)


def _wait_for_alive_nodes(names: list[str], timeout_s: float = 60) -> None:
    """Wait until the head lists exactly these nodes as alive (a new node registers in seconds)."""
    deadline = time.monotonic() + timeout_s
    while sorted(n["NodeName"] for n in ray.nodes() if n["Alive"]) != sorted(names):
        if time.monotonic() > deadline:
            raise TimeoutError(f"The cluster's alive nodes are not {sorted(names)}: {ray.nodes()}")
        time.sleep(0.2)


def _teardown(nodes: dict[str, Node], temp_root: Path, address: str) -> None:
    """Disconnect the driver, stop the workers, then the head; delete the nodes' temp dirs."""
    if _is_driver_of(address):
        ray.shutdown()
    for node in sorted(nodes.values(), key=lambda n: n.name == "head"):
        if node.stopped_at is None:
            stop_node_processes(node, graceful=True)
    shutil.rmtree(temp_root, ignore_errors=True)
