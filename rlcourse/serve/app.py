"""The served policy: PolicyDeployment, a Ray Serve replica answering POST {"obs": ...} with
{"actions": ...} and GET /healthz, batching concurrent requests (`@serve.batch`,
benchmarks/serve_load.py) unless `max_batch_size=1`; `policy_app` binds it to a checkpoint, and
`start` (what `rlcourse serve` calls) runs it on the course's Ray, Serve's HTTP proxy on loopback."""

import logging
import math
import os
from collections.abc import Iterable
from typing import Any

import gymnasium as gym
import numpy as np
from ray import serve
from ray.serve import Application
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse

from rlcourse.serve.body_limit import PROXY_CALLBACK, PROXY_CALLBACK_ENV
from rlcourse.serve.observations import BadRequest, parse_body, read_body
from rlcourse.utils.local_ray import LOOPBACK
from rlcourse.utils.resources import init_ray

APP_NAME = "policy"
DEFAULT_PORT = 8000
DEFAULT_MAX_BATCH_SIZE = 32  # requests per module call
DEFAULT_BATCH_WAIT_TIMEOUT_S = 0.002  # how long the first request of a batch waits for others
# The controller's environment, which its proxy inherits: the proxy's body limit (body_limit.py).
CONTROLLER_OPTIONS = {"runtime_env": {"env_vars": {PROXY_CALLBACK_ENV: PROXY_CALLBACK}}}


def check_batching(max_batch_size: int, batch_wait_timeout_s: float) -> None:
    """Refuse batching settings before Serve starts: Serve itself takes an infinite wait, which
    holds a lone request until `max_batch_size` others arrive."""
    if isinstance(max_batch_size, bool) or not isinstance(max_batch_size, int) or max_batch_size < 1:
        raise ValueError(f"max_batch_size={max_batch_size!r}: give a whole number >= 1 (requests "
                         f"per module call; 1 turns batching off; default {DEFAULT_MAX_BATCH_SIZE}).")
    if (isinstance(batch_wait_timeout_s, bool) or not isinstance(batch_wait_timeout_s, int | float)
            or not math.isfinite(batch_wait_timeout_s) or batch_wait_timeout_s < 0):
        raise ValueError(f"batch_wait_timeout_s={batch_wait_timeout_s!r}: give a finite number of "
                         "seconds >= 0 (how long a batch's first request waits for others; default "
                         f"{DEFAULT_BATCH_WAIT_TIMEOUT_S}).")


@serve.deployment(ray_actor_options={"num_cpus": 0.5}, max_ongoing_requests=256)
class PolicyDeployment:
    """One replica: the module of `checkpoint` (loaded here, so a bad one fails the deployment)."""

    def __init__(self, checkpoint: str | os.PathLike, allowed: Iterable[Any] = (),
                 max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
                 batch_wait_timeout_s: float = DEFAULT_BATCH_WAIT_TIMEOUT_S):
        import torch

        from rlcourse.core.rl_module.module_loading import env_observation_space, greedy_env_actions
        from rlcourse.core.rl_module.rl_module import RLModule

        torch.set_num_threads(1)  # small batches: threads cost more than they give, on shared cores
        self.module = RLModule.from_checkpoint(checkpoint, allowed=allowed)
        # Requests hold raw env observations: the checkpoint's connectors (frozen) process them.
        self.space = env_observation_space(self.module)
        if not isinstance(self.space, gym.spaces.Box | gym.spaces.Discrete):
            raise ValueError(f"The checkpoint {checkpoint}'s env observes {self.space}: requests "
                             "carry Box or Discrete observations as JSON lists. Serve a policy of "
                             "such an env, or act in Python with greedy_env_actions(module, obs).")
        self._greedy = greedy_env_actions
        self.batching = max_batch_size > 1
        self.act_batched.set_max_batch_size(max_batch_size)
        self.act_batched.set_batch_wait_timeout_s(batch_wait_timeout_s)

    def act(self, obs: np.ndarray) -> np.ndarray:
        """The env's greedy actions for a batch of checked observations."""
        return self._greedy(self.module, obs)

    @serve.batch(max_batch_size=DEFAULT_MAX_BATCH_SIZE,
                 batch_wait_timeout_s=DEFAULT_BATCH_WAIT_TIMEOUT_S)
    async def act_batched(self, batches: list[np.ndarray]) -> list[np.ndarray]:
        """The requests that arrived together, through the module as one batch, split again."""
        actions = self.act(np.concatenate(batches))
        return np.split(actions, np.cumsum([len(b) for b in batches])[:-1])

    async def __call__(self, request: Request) -> JSONResponse:
        """A health check, or observations in and actions out; a bad request gets a 4xx answer."""
        if request.url.path.rstrip("/").endswith("/healthz") and request.method == "GET":
            return JSONResponse({"status": "ok"})
        if request.method != "POST":
            return _error(405, f"{request.method} {request.url.path}: POST observations as JSON "
                               "to /, or GET /healthz.")
        try:
            obs = parse_body(await read_body(request), self.space)
        except BadRequest as e:
            return _error(e.status, e.message)
        except ClientDisconnect:  # it left mid-body, or the proxy refused it (body_limit.py): quietly
            return _error(499, "the client left before its body was in.")
        actions = await self.act_batched(obs) if self.batching else self.act(obs)
        return JSONResponse({"actions": actions.tolist()})

    def check_health(self) -> None:
        """Serve calls this every few seconds; a replica whose module fails is replaced."""
        self.act(self.space.sample()[None] if self.space.shape else np.asarray([self.space.sample()]))


def _error(status: int, message: str) -> JSONResponse:
    # 413: close the connection rather than read the rest of a body it will not take.
    headers = {"Connection": "close"} if status == 413 else None
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def policy_app(checkpoint: str | os.PathLike, allowed: Iterable[Any] = (), num_replicas: int = 1,
               max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
               batch_wait_timeout_s: float = DEFAULT_BATCH_WAIT_TIMEOUT_S) -> Application:
    """The deployment of `checkpoint`'s policy with `num_replicas` replicas, bound to its args."""
    check_batching(max_batch_size, batch_wait_timeout_s)
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
