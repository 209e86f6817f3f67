"""The processes of a `ray start` node: started to die with their parent, found by session, stopped
for sure.

Each node of a LocalCluster is one `ray start --block` process leading a session of its own; Ray's
processes for that node (raylet, GCS, agents, workers, actors) stay in that session even when
their parent dies, and a Ray Job's driver carries the node's NODE_MARK in its environment. So a
node's processes are found by session and mark, never by name, and stopping a node stops exactly
them.
"""

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

NODE_MARK = "RLCOURSE_RAY_NODE"  # set in the environment of every process of a node: "<cluster>/<node>"
STOP_TIMEOUT_S = 20.0
PR_SET_PDEATHSIG = 1  # Linux prctl option: a signal the kernel sends us when our parent dies
_PRCTL = getattr(ctypes.CDLL(None), "prctl", None) if sys.platform.startswith("linux") else None


@dataclass
class Node:
    """One node: its `ray start --block` process, what it was given, and where its files are."""

    name: str
    num_cpus: int
    mark: str  # NODE_MARK of its processes: "<the cluster's temp dir, a random name>/<name>"
    log_path: Path  # what `ray start` prints
    process: subprocess.Popen
    command: list[str]  # as one would type it: ["ray", "start", "--block", ...]
    launched_at: float = field(default_factory=time.monotonic)
    stopped_at: float | None = None  # time.time() when stop_node() finished

    @property
    def is_running(self) -> bool:
        return self.process.poll() is None


def die_with_parent() -> None:
    """Runs in the child before `ray start`: the kernel SIGKILLs it when its parent process dies."""
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL)


def node_processes(nodes: list[Node]) -> list[psutil.Process]:
    """The running processes of these nodes.

    Each `ray start` leads a session of its own, and Ray's processes stay in it (they change their
    process group, never their session), even when their parent dies. A Ray Job's driver starts a
    session of its own; it still carries the node's NODE_MARK in its environment.
    """
    sessions = {node.process.pid: node for node in nodes}
    marks = {node.mark for node in nodes}
    found = []
    for process in psutil.process_iter():
        try:
            node = sessions.get(os.getsid(process.pid))
            # A stopped node's session id may be reused: only older processes can be its own.
            in_session = node is not None and (node.stopped_at is None
                                               or process.create_time() <= node.stopped_at)
            if (in_session or process.environ().get(NODE_MARK) in marks) and is_alive(process):
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, ProcessLookupError, PermissionError):
            continue  # gone meanwhile, or another user's
    return found


def is_alive(process: psutil.Process) -> bool:
    """Running and not a zombie (a zombie has exited; it only waits for its parent to reap it)."""
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_until_gone(processes: list[psutil.Process], timeout_s: float) -> list[psutil.Process]:
    """Wait up to `timeout_s` for these processes to end; return those still alive."""
    deadline = time.monotonic() + timeout_s
    while (alive := [p for p in processes if is_alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    return alive


def stop_node_processes(node: Node, graceful: bool) -> None:
    """Stop one node; afterwards none of its processes runs (SIGKILL for whatever lingers)."""
    processes = node_processes([node])
    if graceful and node.is_running:
        node.process.terminate()  # `ray start --block` stops its processes on SIGTERM
        processes = wait_until_gone(processes, STOP_TIMEOUT_S)
    for _ in range(3):  # SIGKILL what is left, then look again for processes started meanwhile
        for process in processes:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()
        wait_until_gone(processes, 5.0)
        processes = node_processes([node])
    with contextlib.suppress(subprocess.TimeoutExpired):
        node.process.wait(timeout=5.0)  # reap our child, so that no zombie is left either
    node.stopped_at = time.time()
