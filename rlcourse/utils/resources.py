"""Starting Ray small and quiet, and checking a config's resource requests before any actor exists
(Ray would queue an actor no node can host forever; a course must fail within seconds instead)."""

import contextlib
import importlib
import logging
import os
import signal
import sys
import threading
import time
from typing import Any, Protocol

import ray
from ray.exceptions import GetTimeoutError
from ray.util import get_current_placement_group, placement_group, remove_placement_group
from ray.util.placement_group import PlacementGroup
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from rlcourse.utils.local_ray import (
    LOOPBACK,
    enable_token_auth,
    loopback_addresses,
    start_retrying_a_slow_node,
)
from rlcourse.utils.validation import fail


class ResourceSettings(Protocol):
    """The settings of an AlgorithmConfig that resource requests read (declared here, so that utils/
    names no config class above it)."""

    num_env_runners: int
    num_cpus_per_env_runner: float
    num_gpus_per_env_runner: float
    custom_resources_per_env_runner: dict[str, float]
    env_runner_cls: Any
    evaluation_num_env_runners: int
    restart_failed_env_runners: bool
    max_num_env_runner_restarts: int
    num_learners: int
    num_cpus_per_learner: float
    num_gpus_per_learner: float
    num_cpus_for_main_process: float
    placement_strategy: str | None

RELEASE_WAIT_S = 5.0
PLACEMENT_TIMEOUT_S = 10.0  # a placement group that is not ready by then cannot be placed
OBJECT_STORE_MB = 200


def current_ray_session() -> str:
    """This driver's job and node in the connected Ray (a new local Ray reuses job ids)."""
    context = ray.get_runtime_context()
    return f"{context.get_job_id()}@{context.get_node_id()}"


def init_ray(num_cpus: int | None = None, **kwargs) -> None:
    """Start (or join) Ray without dashboard, quietly; safe to call again. A new local Ray listens
    on 127.0.0.1 only (local_ray.py), with an object store that fits Binder."""
    if ray.is_initialized():
        return
    _import_torch_in_background()
    kwargs.update(num_cpus=num_cpus, include_dashboard=False, logging_level=logging.WARNING)
    address = kwargs.get("address") or os.environ.get("RAY_ADDRESS")
    if not address:  # a new local Ray
        kwargs.setdefault("object_store_memory", OBJECT_STORE_MB * 1024 * 1024)
        kwargs["_node_ip_address"] = LOOPBACK
        enable_token_auth()
    # Ray would replace 127.0.0.1 (also in an address) by this machine's network address.
    local = not address or address.startswith(LOOPBACK)
    with _sigterm_shuts_down(), loopback_addresses() if local else contextlib.nullcontext():
        if address:
            ray.init(**kwargs)
        else:
            start_retrying_a_slow_node(lambda: ray.init(**kwargs))


@contextlib.contextmanager
def _sigterm_shuts_down():
    """Replace the SIGTERM handler `ray.init` puts in (it aborts, orphaning Ray's processes) by the
    previous one, or by an exit that runs Ray's atexit shutdown: `kill` leaves no process behind."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers
        return
    previous = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM,
                      _exit_on_sigterm if previous in (signal.SIG_DFL, None) else previous)


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def _import_torch_in_background() -> None:
    """Import torch._dynamo (seconds of CPU) in a thread while `ray.init` waits for Ray's
    processes; the stdlib modules both import come first, so neither waits on a lock."""
    if "torch._dynamo" in sys.modules:
        return
    for name in ("argparse", "ctypes.util", "gettext", "gzip", "pkgutil", "timeit"):
        importlib.import_module(name)
    threading.Thread(target=_import_torch, name="rlcourse-import-torch", daemon=True).start()


def _import_torch() -> None:
    with contextlib.suppress(Exception):  # an import error surfaces where torch is really used
        importlib.import_module("torch._dynamo")


def current_placement_group() -> PlacementGroup | None:
    """The placement group (a Tune trial's) that this process's actors join; None outside one."""
    return get_current_placement_group() if ray.is_initialized() else None


def _bundle(**amounts: float) -> dict[str, float]:
    return {name: amount for name, amount in amounts.items() if amount > 0}


def _runner_bundle(config: ResourceSettings) -> dict[str, float]:
    return _bundle(CPU=config.num_cpus_per_env_runner, GPU=config.num_gpus_per_env_runner,
                   **config.custom_resources_per_env_runner)


def trial_bundles(config: ResourceSettings) -> list[dict[str, float]]:
    """Everything a run of `config` starts as placement-group bundles (RLlib's
    `default_resource_request`): main process, runners, learners; reserved together."""
    local_learner_gpus = config.num_gpus_per_learner if config.num_learners == 0 else 0
    runner = _runner_bundle(config)
    learner = _bundle(CPU=config.num_cpus_per_learner, GPU=config.num_gpus_per_learner)
    runners = config.num_env_runners + config.evaluation_num_env_runners
    # Only the first bundle may be empty (a main process that reserves nothing).
    return ([_bundle(CPU=config.num_cpus_for_main_process, GPU=local_learner_gpus)]
            + [runner] * (runners if runner else 0)
            + [learner] * (config.num_learners if learner else 0))


def check_gpus(config: ResourceSettings) -> None:
    """A GPU request on a machine without GPUs fails now, instead of waiting forever."""
    if config.num_learners == 0 and config.num_gpus_per_learner > 0:
        import torch  # only when a GPU is asked for: importing torch takes seconds

        if not torch.cuda.is_available():
            fail(config, "num_gpus_per_learner", "this machine has no CUDA GPU for the local "
                 "learner; set num_gpus_per_learner=0 to train on the CPU.")
    if not ray.is_initialized() or current_placement_group() is not None:
        return
    _check_fits(config, "GPU", "num_gpus_per_env_runner", "num_gpus_per_learner",
                "Set {setting}=0 to use CPUs, or ask for fractions.")


def check_custom_resources(config: ResourceSettings) -> None:
    """Custom resources the runners ask for must exist in the cluster (else Ray waits forever)."""
    have = ray.cluster_resources()
    runners = config.num_env_runners + config.evaluation_num_env_runners
    for name, amount in config.custom_resources_per_env_runner.items():
        if runners * amount > have.get(name, 0) + 1e-9:
            fail(config, "custom_resources_per_env_runner", (
                f"{runners} runners x {amount} {name!r} = {runners * amount:g}, but the Ray "
                f"cluster has {have.get(name, 0):g} in all. Start nodes with that resource "
                "(ray start --resources='{...}') or ask for less."))


def check_cpus(config: ResourceSettings) -> None:
    """Runner and learner actors together must fit into the cluster's free CPUs."""
    _check_fits(config, "CPU", "num_cpus_per_env_runner", "num_cpus_per_learner",
                "Ask for fractions (e.g. {setting}=0.5) or fewer actors; if an earlier Algorithm "
                "still runs in this kernel, call its stop().")


def _check_fits(config: ResourceSettings, resource: str, runner_setting: str,
                learner_setting: str, advice: str) -> None:
    """Runners (training and evaluation) and learner actors together must fit into the cluster's
    free `resource`; the error names the setting that asks for more of it."""
    num_runners = config.num_env_runners + config.evaluation_num_env_runners
    per_runner, per_learner = getattr(config, runner_setting), getattr(config, learner_setting)
    runners, learners = num_runners * per_runner, config.num_learners * per_learner
    if (have := _free(resource, runners + learners)) < runners + learners - 1e-9:
        setting = runner_setting if runners >= learners else learner_setting
        fail(config, setting, (
            f"{num_runners} env runners (training and evaluation) x {per_runner} {resource} + "
            f"{config.num_learners} learners x {per_learner} {resource} = {runners + learners:g} "
            f"{resource}s, but the Ray cluster has {have:g} free. " + advice.format(setting=setting)))


def _free(resource: str, need: float) -> float:
    """The cluster's free `resource`, after waiting up to RELEASE_WAIT_S for `need` of it: actors
    killed a moment ago (an Algorithm just stopped) release theirs within seconds. No wait where
    the whole cluster has less."""
    deadline = time.monotonic() + RELEASE_WAIT_S
    while ((have := ray.available_resources().get(resource, 0)) < need - 1e-9
           and ray.cluster_resources().get(resource, 0) >= need - 1e-9
           and time.monotonic() < deadline):
        time.sleep(0.1)
    return have


def make_placement_group(config: ResourceSettings, n: int) -> PlacementGroup:
    """One bundle per runner, placed by `placement_strategy`, or a ConfigError within
    PLACEMENT_TIMEOUT_S."""
    bundle = _runner_bundle(config)
    group = placement_group([bundle] * n, strategy=config.placement_strategy)
    try:
        ray.get(group.ready(), timeout=PLACEMENT_TIMEOUT_S)
    except GetTimeoutError:
        remove_placement_group(group)
        fail(config, "placement_strategy", f"the cluster cannot place {n} runner bundles {bundle} "
              f"this way within {PLACEMENT_TIMEOUT_S:g} s (nodes: {len(ray.nodes())}). Use 'PACK' "
              "or 'SPREAD', or fewer runners.")
    return group


def env_runner_options(config: ResourceSettings, group: PlacementGroup | None, i: int) -> dict:
    """Ray actor options of runner `i`: resources, restarts, bundle of `group`, and the driver's
    values of its class's `driver_env_vars` (secrets kept out of the config)."""
    options = {"num_cpus": config.num_cpus_per_env_runner,
               "num_gpus": config.num_gpus_per_env_runner,
               "resources": dict(config.custom_resources_per_env_runner)}
    if group is not None:
        options["scheduling_strategy"] = PlacementGroupSchedulingStrategy(
            group, placement_group_bundle_index=i)
    if config.restart_failed_env_runners:
        options["max_restarts"] = config.max_num_env_runner_restarts
    names = getattr(config.env_runner_cls, "driver_env_vars", ())
    if env_vars := {k: os.environ[k] for k in names if k in os.environ}:
        options["runtime_env"] = {"env_vars": env_vars}
    return options


def learner_options(config: ResourceSettings) -> dict:
    """Ray actor options of each Learner actor (num_gpus 0.5 lets two learners share one GPU)."""
    return {"num_cpus": config.num_cpus_per_learner, "num_gpus": config.num_gpus_per_learner}

