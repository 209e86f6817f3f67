"""Which EnvRunner actors are healthy, and what a failed request does to one (RLlib: its
FaultTolerantActorManager)."""

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import ray
from ray.exceptions import ActorUnavailableError, GetTimeoutError, RayActorError

if TYPE_CHECKING:
    from rlcourse.algorithms.algorithm_config import AlgorithmConfig

PROBE_RETRY_S = 0.2  # pause between health probes of a runner that Ray is restarting


class EnvRunnerFailure(RuntimeError):
    """Runner actors failed and the fault-tolerance settings say not to go on without them."""


class EnvRunnerHealth:
    """The health of `actors` (EnvRunner actor handles), kept by their EnvRunnerGroup. Ray restarts a
    dead actor; after a failed request it is pinged until it answers (its new process id tells a
    restart from a late answer) or `env_runner_health_probe_timeout_s` passes, then probed in the
    background while the others go on (with `ignore_env_runner_failures`). Failed requests in a row
    (an env that always crashes or hangs) end the run: a restart would not help."""

    def __init__(self, config: "AlgorithmConfig", actors: list,
                 on_recreated: Callable[[list[int]], None] | None):
        self.config, self.actors = config, actors
        self.on_recreated = on_recreated  # called with the indices of restarted runners
        self.healthy = [True] * len(actors)
        self.pids: list[int | None] = [None] * len(actors)
        self.restarts = [0] * len(actors)  # Ray restarts each at most max_num_env_runner_restarts
        self.num_failures = 0
        self._consecutive_failures = [0] * len(actors)  # failed requests since the last good one
        self._probes: dict[int, ray.ObjectRef] = {}  # unhealthy runner -> its pending ping

    @property
    def num_restarts(self) -> int:
        return sum(self.restarts)

    def answered(self, i: int, pid: int) -> None:
        """Runner i answered a request from process `pid`."""
        self.note_pid(i, pid)
        self._consecutive_failures[i] = 0

    def note_pid(self, i: int, pid: int) -> None:
        if self.pids[i] is not None and pid != self.pids[i]:
            self.restarts[i] += 1
            if self.on_recreated is not None:
                self.on_recreated([i])
        self.pids[i] = pid

    def came_back_after(self, i: int, error: Exception) -> bool:
        """Count runner i's failed request; True if it answers a probe in time (Ray restarted it).
        Raises EnvRunnerFailure once it has failed too many requests in a row."""
        self.num_failures += 1
        self._consecutive_failures[i] += 1
        tolerance = self.config.num_consecutive_env_runner_failures_tolerance
        if self._consecutive_failures[i] >= tolerance:
            raise EnvRunnerFailure(
                f"EnvRunner {i + 1} failed {tolerance} requests in a row (sample_timeout_s="
                f"{self.config.sample_timeout_s}), the last with {type(error).__name__}: {error}. "
                "Fix its env (it crashes, hangs or is slower than sample_timeout_s), or raise config."
                "fault_tolerance(num_consecutive_env_runner_failures_tolerance=...).") from error
        return self.config.restart_failed_env_runners and self._probe(i)

    def give_up_on(self, i: int, error: Exception) -> None:
        """Mark runner i unhealthy (probed again in the background if restarts are on); raise
        EnvRunnerFailure unless `ignore_env_runner_failures`."""
        self.healthy[i] = False
        if self.config.restart_failed_env_runners:
            self._probes[i] = self.actors[i].ping.remote()  # it may still come back
        if not self.config.ignore_env_runner_failures:
            raise EnvRunnerFailure(
                f"EnvRunner {i + 1} failed ({type(error).__name__}: {error}) and is lost: "
                f"{self._why_lost(i)}. Or set config.fault_tolerance(ignore_env_runner_failures="
                "True) to go on with the healthy runners.") from error

    def _why_lost(self, i: int) -> str:
        """Why runner i is not coming back, and which setting would change that."""
        config = self.config
        if not config.restart_failed_env_runners:
            return ("restart_failed_env_runners is False: set config.fault_tolerance("
                    "restart_failed_env_runners=True) to restart it")
        if self.restarts[i] >= config.max_num_env_runner_restarts:
            return (f"its max_num_env_runner_restarts={config.max_num_env_runner_restarts} "
                    "restarts are used up: raise it in config.fault_tolerance()")
        return ("it did not come back within env_runner_health_probe_timeout_s="
                f"{config.env_runner_health_probe_timeout_s}")

    def _probe(self, i: int) -> bool:
        """Wait for runner i to answer (Ray restarts a dead actor); True if it did in time."""
        deadline = time.monotonic() + self.config.env_runner_health_probe_timeout_s
        while True:
            try:
                pid = ray.get(self.actors[i].ping.remote(),
                              timeout=max(0.0, deadline - time.monotonic()))
                break
            except ActorUnavailableError:  # being restarted: ask again until the deadline
                if time.monotonic() > deadline:
                    return False
                time.sleep(PROBE_RETRY_S)
            except (RayActorError, GetTimeoutError):  # dead for good, or no answer in time
                return False
        self.note_pid(i, pid)
        return True

    def healthy_indices(self) -> list[int]:
        """Healthy runners, after taking back unhealthy ones whose probe has been answered."""
        for i, ref in list(self._probes.items()):
            if ray.wait([ref], timeout=0)[0]:
                del self._probes[i]
                try:
                    self.note_pid(i, ray.get(ref))
                    self.healthy[i] = True
                except ActorUnavailableError:  # still restarting: ask again next time
                    self._probes[i] = self.actors[i].ping.remote()
                except RayActorError:
                    pass  # gone for good (no restarts left)
        healthy = [i for i, ok in enumerate(self.healthy) if ok]
        if not healthy:
            lost: dict[str, list[str]] = {}  # why -> the runners lost for that reason
            for i in range(len(self.actors)):
                lost.setdefault(self._why_lost(i), []).append(str(i + 1))
            raise EnvRunnerFailure("No healthy EnvRunner is left to sample from; " + "; ".join(
                f"EnvRunner {', '.join(ids)}: {why}" for why, ids in lost.items())
                + ". See the runners' errors above.")
        return healthy

    def stop(self) -> None:
        self._probes.clear()
