"""A Ray on this machine that only this machine can reach: loopback addresses and token authentication.

Ray gives a node the machine's network address so that other machines can join it, and its servers
(GCS, raylet, agents, workers) then listen there or on every interface. A course on a laptop in a
cafe, or a workshop's shared network, wants none of that: a node whose address is 127.0.0.1 binds
its servers to the loopback interface only. Ray's token authentication stays on as a second lock:
a process of another user on this machine cannot submit jobs or tasks without the token.

`init_ray` (rlcourse/utils/resources.py) and the cluster lesson's `LocalCluster` both use this.
"""

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

LOOPBACK = "127.0.0.1"


def loopback_ip(address: str | None = None) -> str:
    """Stands in for Ray's `services.get_node_ip_address`: this machine's address is 127.0.0.1."""
    return LOOPBACK


@contextlib.contextmanager
def loopback_addresses() -> Iterator[None]:
    """Within the block, Ray takes 127.0.0.1 as this machine's address.

    `ray.init(_node_ip_address="127.0.0.1")` alone is not enough: Ray replaces a loopback address by
    the machine's network address (`services.resolve_ip_for_localhost`), so that other machines could
    reach the node. The processes Ray starts then receive 127.0.0.1 as their node's address.
    """
    from ray._private import services

    with mock.patch.object(services, "get_node_ip_address", loopback_ip):
        yield


def loopback_start_hook(ray_params, head: bool) -> None:
    """Runs inside `ray start` before it starts anything (Ray's RAY_START_HOOK): keep 127.0.0.1.

    The same replacement as in `loopback_addresses`, for `--node-ip-address` and `--address`.
    """
    from ray._private import services

    ray_params.node_ip_address = LOOPBACK
    services.get_node_ip_address = loopback_ip
    ray_params.ray_client_server_port = None  # no Ray Client server (ray://): nothing here uses it


def auth_token_path() -> Path:
    """Where Ray reads its token from: $RAY_AUTH_TOKEN_PATH, else ~/.ray/auth_token."""
    return Path(os.environ.get("RAY_AUTH_TOKEN_PATH") or Path.home() / ".ray" / "auth_token")


def enable_token_auth() -> None:
    """Turn Ray's token authentication on for this process and the Ray it starts.

    Ray 2.60 turns it on by default for a new local Ray too, but with a warning at every start and
    a token file that every user of the machine can read. Here the file is created readable by its
    owner only, and an existing one that others can read is made so. A user who set RAY_AUTH_MODE
    themselves keeps their choice; a token given in $RAY_AUTH_TOKEN needs no file.
    """
    if "RAY_AUTH_MODE" not in os.environ:
        from ray._raylet import Config

        os.environ["RAY_AUTH_MODE"] = "token"
        Config.initialize("")  # Ray read its settings from the environment when it was imported
    if os.environ["RAY_AUTH_MODE"] != "token" or os.environ.get("RAY_AUTH_TOKEN"):
        return
    import secrets

    path = auth_token_path()
    if not path.exists():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):  # another process created it just now
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_hex(32))  # 256 random bits, as Ray's own tokens
    info = path.stat()
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO) and info.st_uid == os.getuid():
        path.chmod(0o600)
