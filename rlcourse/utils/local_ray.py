"""A Ray that only this machine can reach: its node's address 127.0.0.1 binds its servers to the
loopback interface (not a cafe's network), and token authentication keeps other users out."""

import contextlib
import logging
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from unittest import mock

LOOPBACK = "127.0.0.1"
NODE_TIMED_OUT = "timed out during startup"  # Ray's error when its node took over 30 s to register


def loopback_ip(address: str | None = None) -> str:
    """Stands in for Ray's `services.get_node_ip_address`: this machine's address is 127.0.0.1."""
    return LOOPBACK


@contextlib.contextmanager
def loopback_addresses() -> Iterator[None]:
    """Within the block, Ray takes 127.0.0.1 as this machine's address (`_node_ip_address` alone
    would be replaced by the network address)."""
    from ray._private import services

    with mock.patch.object(services, "get_node_ip_address", loopback_ip):
        yield


def loopback_start_hook(ray_params, head: bool) -> None:
    """Ray's RAY_START_HOOK: inside `ray start`, keep 127.0.0.1 as in `loopback_addresses`."""
    from ray._private import services

    ray_params.node_ip_address = LOOPBACK
    services.get_node_ip_address = loopback_ip
    ray_params.ray_client_server_port = None  # no Ray Client server (ray://): nothing here uses it


def enable_token_auth() -> None:
    """Turn Ray's token authentication on (unless RAY_AUTH_MODE is set), with a token file only its
    owner can read (Ray's default is readable by all)."""
    if "RAY_AUTH_MODE" not in os.environ:
        from ray._raylet import Config

        os.environ["RAY_AUTH_MODE"] = "token"
        Config.initialize("")  # Ray read its settings from the environment when it was imported
    if os.environ["RAY_AUTH_MODE"] != "token" or os.environ.get("RAY_AUTH_TOKEN"):
        return
    import secrets

    path = Path(os.environ.get("RAY_AUTH_TOKEN_PATH") or Path.home() / ".ray" / "auth_token")
    if not path.exists():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):  # another process created it just now
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_hex(32))  # 256 random bits, as Ray's own tokens
    info = path.stat()
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO) and info.st_uid == os.getuid():
        path.chmod(0o600)


def start_retrying_a_slow_node(start: Callable[[], None]) -> None:
    """Run `start` (a `ray.init` of a new local Ray) and, should its node miss Ray's fixed 30 s
    start-up wait (ray/_private/node.py; a machine busy with other work), stop the processes
    it left half-started and start once more, so that a busy laptop gets its Ray."""
    import psutil

    before = set(psutil.Process().children())
    try:
        start()
    except Exception as error:
        if NODE_TIMED_OUT not in str(error):
            raise
        logging.getLogger(__name__).warning("Ray's node took over 30 s to start (is the machine "
                                            "busy?): stopping it and starting Ray once more")
        _stop([child for child in psutil.Process().children()
               if child not in before and _is_ray_process(child)])
        start()


def _is_ray_process(process) -> bool:
    import ray

    package = os.path.dirname(ray.__file__)
    with contextlib.suppress(Exception):  # it may have ended meanwhile
        return any(arg.startswith(package) for arg in process.cmdline())
    return False


def _stop(processes: list) -> None:
    """Terminate the processes and everything they started; kill what is left after 5 s."""
    import psutil

    family = list(processes)
    for process in processes:
        with contextlib.suppress(psutil.Error):
            family += process.children(recursive=True)
    for process in family:
        with contextlib.suppress(psutil.Error):
            process.terminate()
    for process in psutil.wait_procs(family, timeout=5)[1]:
        with contextlib.suppress(psutil.Error):
            process.kill()
