"""Starting Ray small and quiet, and checking a config's resource requests before any actor exists.

Ray queues an actor whose resources no node has and waits forever; a course cannot hang in front of
a room, so the requests are checked against the cluster first and fail within seconds.
"""

import contextlib
import importlib
import logging
import os
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING

import ray
from ray.exceptions import GetTimeoutError
from ray.util.placement_group import (
    PlacementGroup,
    get_current_placement_group,
    placement_group,
    remove_placement_group,
)
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from rlcourse.utils.local_ray import LOOPBACK, enable_token_auth, loopback_addresses
from rlcourse.utils.validation import fail

if TYPE_CHECKING:
    from rlcourse.algorithms.algorithm_config import AlgorithmConfig

RELEASE_WAIT_S = 5.0
PLACEMENT_TIMEOUT_S = 10.0  # a placement group that is not ready by then cannot be placed
OBJECT_STORE_MB = 200


def init_ray(num_cpus: int | None = None, **kwargs) -> None:
    """Start (or join) Ray without the dashboard and with quiet logs; safe to call again.

    A new local Ray listens on 127.0.0.1 only, with Ray's token authentication on (see
    rlcourse/utils/local_ray.py), and gets a small object store (OBJECT_STORE_MB): the course's
    objects are weights and episodes of a few MB, and a small store fits Binder's 2 GiB and a
    container's small /dev/shm. Joining a cluster (`address=` or $RAY_ADDRESS) changes neither, and
    joins a Ray on 127.0.0.1 (the cluster lesson's) at that address.
    """
    if ray.is_initialized():
        return
    _import_torch_in_background()
    kwargs.update(num_cpus=num_cpus, include_dashboard=False, logging_level=logging.WARNING)
    address = kwargs.get("address") or os.environ.get("RAY_ADDRESS")
    with _sigterm_shuts_down():
        if address:
            # Ray would replace 127.0.0.1 in an address by this machine's network address.
            local = address.startswith(LOOPBACK)
            with loopback_addresses() if local else contextlib.nullcontext():
                ray.init(**kwargs)
            return
        kwargs.setdefault("object_store_memory", OBJECT_STORE_MB * 1024 * 1024)
        enable_token_auth()
        with loopback_addresses():
            ray.init(_node_ip_address=LOOPBACK, **kwargs)


@contextlib.contextmanager
def _sigterm_shuts_down():
    """`ray.init` puts in a SIGTERM handler that aborts the process and orphans Ray's processes;
    put back the Python handler there was, or one that exits as Ctrl-C would (running Ray's
    atexit shutdown), so `kill`, `timeout` and a stopping kernel leave no process behind."""
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
    """Start importing torch (and torch._dynamo, which the first optimizer loads) in a thread.

    The Learner will need both: about 4 s of CPU in a fresh process. `ray.init` mostly waits for
    Ray's own processes to start, so the driver's core is free meanwhile. The standard-library
    modules that both imports load are loaded first, so the two never wait on one import lock.
    """
    if "torch._dynamo" in sys.modules:
        return
    for name in ("argparse", "ctypes.util", "gettext", "gzip", "pkgutil", "timeit"):
        importlib.import_module(name)
    threading.Thread(target=_import_torch, name="rlcourse-import-torch", daemon=True).start()


def _import_torch() -> None:
    with contextlib.suppress(Exception):  # an import error surfaces where torch is really used
        importlib.import_module("torch._dynamo")


def _local_cuda() -> bool:
    import torch  # only when a GPU is asked for: importing torch takes seconds
    return torch.cuda.is_available()


def current_placement_group() -> PlacementGroup | None:
    """The placement group this process runs in, which the actors it starts go into as well: a Ray
    Tune trial's, which reserved the trial's driver, runners and learners before it started (see
    `trial_bundles`). None outside a placement group (or without Ray)."""
    return get_current_placement_group() if ray.is_initialized() else None


def trial_bundles(config: "AlgorithmConfig") -> list[dict[str, float]]:
    """Everything a run of `config` starts, as placement-group bundles (RLlib's
    `default_resource_request`): the main process (with the local learner's GPU), then each runner,
    learner and evaluation runner. Reserved together, runs never oversubscribe the CPUs."""
    def bundle(**amounts: float) -> dict[str, float]:
        return {name: amount for name, amount in amounts.items() if amount > 0}

    local_learner_gpus = config.num_gpus_per_learner if config.num_learners == 0 else 0
    runner = bundle(CPU=config.num_cpus_per_env_runner, GPU=config.num_gpus_per_env_runner,
                    **config.custom_resources_per_env_runner)
    learner = bundle(CPU=config.num_cpus_per_learner, GPU=config.num_gpus_per_learner)
    runners = config.num_env_runners + config.evaluation_num_env_runners
    # Only the first bundle may be empty (a main process that reserves nothing).
    return ([bundle(CPU=config.num_cpus_for_main_process, GPU=local_learner_gpus)]
            + [runner] * (runners if runner else 0)
            + [learner] * (config.num_learners if learner else 0))


def check_gpus(config: "AlgorithmConfig") -> None:
    """A GPU request on a machine without GPUs fails now, instead of waiting forever."""
    if config.num_learners == 0 and config.num_gpus_per_learner > 0 and not _local_cuda():
        fail(config, "num_gpus_per_learner", "this machine has no CUDA GPU for the local learner; "
              "set num_gpus_per_learner=0 to train on the CPU.")
    if not ray.is_initialized() or current_placement_group() is not None:
        return
    have = ray.available_resources().get("GPU", 0)
    for setting, count in (("num_gpus_per_env_runner", config.num_env_runners),
                           ("num_gpus_per_learner", config.num_learners)):
        need = count * getattr(config, setting)
        if need > have:
            fail(config, setting, f"{count} actors x {getattr(config, setting)} GPU = {need} "
                  f"GPUs, but the Ray cluster has {have:g} free. Set {setting}=0 to use CPUs.")


def check_custom_resources(config: "AlgorithmConfig") -> None:
    """Custom resources the runners ask for must exist in the cluster (else Ray waits forever)."""
    have = ray.cluster_resources()
    runners = config.num_env_runners + config.evaluation_num_env_runners
    for name, amount in config.custom_resources_per_env_runner.items():
        if runners * amount > have.get(name, 0) + 1e-9:
            fail(config, "custom_resources_per_env_runner", (
                f"{runners} runners x {amount} {name!r} = {runners * amount:g}, but the Ray "
                f"cluster has {have.get(name, 0):g} in all. Start nodes with that resource "
                "(ray start --resources='{...}') or ask for less."))


def check_cpus(config: "AlgorithmConfig") -> None:
    """Runner and learner actors together must fit into the cluster's free CPUs."""
    runners = ((config.num_env_runners + config.evaluation_num_env_runners)
               * config.num_cpus_per_env_runner)
    learners = config.num_learners * config.num_cpus_per_learner
    # Actors killed a moment ago (an Algorithm just stopped) release their CPUs within seconds.
    deadline = time.monotonic() + RELEASE_WAIT_S
    while (have := ray.available_resources().get("CPU", 0)) < runners + learners - 1e-9:
        if time.monotonic() > deadline:
            break
        time.sleep(0.1)
    else:
        return
    setting = "num_cpus_per_env_runner" if runners >= learners else "num_cpus_per_learner"
    fail(config, setting, (
        f"{config.num_env_runners + config.evaluation_num_env_runners} env runners (training "
        f"and evaluation) x {config.num_cpus_per_env_runner} CPU + "
        f"{config.num_learners} learners x {config.num_cpus_per_learner} CPU = "
        f"{runners + learners:g} CPUs, but the Ray cluster has {have:g} free. Ask for fractions "
        "(e.g. num_cpus_per_env_runner=0.5) or fewer actors; if an earlier Algorithm still runs "
        "in this kernel, call its stop()."))


def make_placement_group(config: "AlgorithmConfig", n: int) -> PlacementGroup:
    """One bundle of resources per runner, placed on the nodes by `placement_strategy`; a placement
    the cluster cannot make fails within PLACEMENT_TIMEOUT_S instead of waiting forever."""
    bundle = {"CPU": config.num_cpus_per_env_runner, "GPU": config.num_gpus_per_env_runner,
              **config.custom_resources_per_env_runner}
    bundle = {name: amount for name, amount in bundle.items() if amount > 0}
    group = placement_group([bundle] * n, strategy=config.placement_strategy)
    try:
        ray.get(group.ready(), timeout=PLACEMENT_TIMEOUT_S)
    except GetTimeoutError:
        remove_placement_group(group)
        fail(config, "placement_strategy", f"the cluster cannot place {n} runner bundles {bundle} "
              f"this way within {PLACEMENT_TIMEOUT_S:g} s (nodes: {len(ray.nodes())}). Use 'PACK' "
              "or 'SPREAD', or fewer runners.")
    return group


def env_runner_options(config: "AlgorithmConfig", group: PlacementGroup | None, i: int) -> dict:
    """Ray actor options of runner actor `i`: what it reserves, how often Ray may restart it, and
    its bundle of the placement group (if there is one)."""
    options = {"num_cpus": config.num_cpus_per_env_runner,
               "num_gpus": config.num_gpus_per_env_runner,
               "resources": dict(config.custom_resources_per_env_runner),
               **bundle_options(group, i)}
    if config.restart_failed_env_runners:
        options["max_restarts"] = config.max_num_env_runner_restarts
    return options


def learner_options(config: "AlgorithmConfig") -> dict:
    """Ray actor options of each Learner actor: its CPUs and GPUs (a fraction such as 0.5 lets two
    learners share one GPU). The learner computes on the GPU it reserves (`get_device`)."""
    return {"num_cpus": config.num_cpus_per_learner, "num_gpus": config.num_gpus_per_learner}


def bundle_options(group: PlacementGroup | None, i: int) -> dict:
    """Actor options that put an actor into bundle `i` of `group` (none without a group)."""
    if group is None:
        return {}
    return {"scheduling_strategy": PlacementGroupSchedulingStrategy(
        group, placement_group_bundle_index=i)}
