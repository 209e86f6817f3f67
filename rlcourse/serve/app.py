"""The Serve application of a checkpoint (`policy_app`), run on the course's Ray with Serve's HTTP
proxy on loopback (`start`, what `rlcourse serve` calls)."""

import logging
import os
from collections.abc import Iterable
from typing import Any

from ray import serve
from ray.serve import Application

from rlcourse.serve.body_limit import PROXY_CALLBACK, PROXY_CALLBACK_ENV
from rlcourse.serve.deployment import (
    DEFAULT_BATCH_WAIT_TIMEOUT_S,
    DEFAULT_MAX_BATCH_SIZE,
    PolicyDeployment,
)
from rlcourse.utils.local_ray import LOOPBACK
from rlcourse.utils.resources import init_ray

APP_NAME = "policy"
DEFAULT_PORT = 8000
# The controller's environment, which its proxy inherits: the proxy's body limit (body_limit.py).
CONTROLLER_OPTIONS = {"runtime_env": {"env_vars": {PROXY_CALLBACK_ENV: PROXY_CALLBACK}}}


def policy_app(checkpoint: str | os.PathLike, allowed: Iterable[Any] = (), num_replicas: int = 1,
               max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
               batch_wait_timeout_s: float = DEFAULT_BATCH_WAIT_TIMEOUT_S) -> Application:
    """The deployment of `checkpoint`'s policy with `num_replicas` replicas, bound to its args."""
    return PolicyDeployment.options(num_replicas=num_replicas).bind(
        str(checkpoint), list(allowed), max_batch_size, batch_wait_timeout_s)


def start(app: Application, port: int = DEFAULT_PORT) -> str:
    """Run `app` on the course's Ray with Serve's HTTP proxy on 127.0.0.1:`port`; return its URL."""
    init_ray()
    logging.getLogger("ray.serve").setLevel(logging.WARNING)  # not every start and deployment
    serve.start(http_options={"host": LOOPBACK, "port": port},
                logging_config={"log_level": "WARNING", "enable_access_log": False},
                controller_options=CONTROLLER_OPTIONS)
    deploy(app)
    return f"http://{LOOPBACK}:{port}/"


def deploy(app: Application, name: str = APP_NAME, route_prefix: str = "/") -> None:
    """Deploy `app` and wait for its replicas; if they fail, delete it and raise RuntimeError why."""
    try:
        # No access log: a log line per request would cost more than the module's forward pass.
        serve.run(app, name=name, route_prefix=route_prefix,
                  logging_config={"log_level": "WARNING", "enable_access_log": False})
    except RuntimeError as e:
        status = serve.status().applications.get(name)  # the reason: its error's last line
        deployments = status.deployments.values() if status else []
        lines = [line.strip() for d in deployments for line in d.message.strip().splitlines()]
        serve.delete(name)
        raise RuntimeError(f"Deploying {name!r} failed: {lines[-1] if lines else e}") from None


def shutdown() -> None:
    """Stop Serve (proxy, controller, replicas) and Ray: no process is left."""
    import ray

    if ray.is_initialized():
        serve.shutdown()
        ray.shutdown()
