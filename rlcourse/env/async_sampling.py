"""AsyncSamplingMixin: EnvRunnerGroup's asynchronous sampling (IMPALA's and Ape-X's training_step).

The group keeps up to `max_requests_in_flight` sample requests running on each healthy runner,
collects whichever are done with one `ray.wait` (never a `ray.get` in a loop) and tops the requests
up again, so the driver never waits for the slowest runner. A runner that owes an answer for longer than
`sample_timeout_s` is failed like one whose synchronous request timed out (env_runner_group.py
handles failures; env_runner_health.py decides whether the runner is back). Ape-X takes the finished
requests' ObjectRefs instead (`fetch_ready_async_sample_refs`) and settles each one when its replay
shard has read it.
"""

import time

import ray
from ray.exceptions import GetTimeoutError

from rlcourse.env.sample_result import SampleResult


class AsyncSamplingMixin:
    """The async sample requests of an EnvRunnerGroup (env_runner_group.py), which holds them in
    `_in_flight` (request -> runner index) and `_owing_since` (runner -> since when it owes an answer).
    """

    def fetch_ready_async_samples(self, max_requests_in_flight: int, timeout_s: float = 1.0
                                  ) -> list[SampleResult]:
        """Keep up to `max_requests_in_flight` `sample()` requests running on each healthy runner
        and return the results of those that are done, without waiting for the slowest runner.
        """
        if self.local_env_runner is not None:  # no actors: sample here, synchronously
            result = self.local_env_runner.sample_and_get_metrics()
            self._merge_env_to_module_buffers(result.env_to_module_buffers)
            return [result]
        self._top_up_requests(max_requests_in_flight)
        refs = list(self._in_flight)
        ready, _ = ray.wait(refs, num_returns=1, timeout=timeout_s)
        if ready:  # take everything else that is done by now, too
            ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
        results = []
        for ref in ready:
            i = self._in_flight.pop(ref)
            self._owing_since[i] = time.monotonic()  # it answered: its next answer is due from now
            result = self._get(ref, i, timeout_s=None)
            if result is not None:
                results.append(result)
        self._end_hung_requests()
        self._top_up_requests(max_requests_in_flight)
        return results

    @property
    def in_flight_sample_requests(self) -> list[ray.ObjectRef]:
        """The async sample requests still running, for a caller that waits on them beside its own
        requests (one `ray.wait` over all)."""
        return list(self._in_flight)

    def fetch_ready_async_sample_refs(self, max_requests_in_flight: int, timeout_s: float = 0.0
                                      ) -> list[tuple[int, ray.ObjectRef]]:
        """As `fetch_ready_async_samples`, but returns (runner index, ObjectRef of its SampleResult)
        without fetching the results: Ape-X hands them to a replay shard, which resolves them in its
        own process. Settle each with `settle_async_sample` once its consumer answers."""
        self._top_up_requests(max_requests_in_flight)
        refs = list(self._in_flight)
        ready = ray.wait(refs, num_returns=len(refs), timeout=timeout_s,
                         fetch_local=False)[0] if refs else []
        for ref in ready:
            self._owing_since[self._in_flight[ref]] = time.monotonic()
        finished = [(self._in_flight.pop(ref), ref) for ref in ready]
        self._end_hung_requests()
        self._top_up_requests(max_requests_in_flight)
        return finished

    def settle_async_sample(self, i: int, pid_or_error: int | Exception,
                            env_to_module_buffers: list | None = None) -> None:
        """Runner i's forwarded sample was consumed (its process id, and the connector statistics
        the sample carried, which are merged here) or failed (the error, e.g. the RayActorError its
        consumer met): counted and handled as `fetch_ready_async_samples` does."""
        if isinstance(pid_or_error, Exception):
            self._handle_failure(i, pid_or_error)
        else:
            self.health.answered(i, pid_or_error)
            self._merge_env_to_module_buffers(env_to_module_buffers)

    def _end_hung_requests(self) -> None:
        """A runner that owes an async answer for longer than `sample_timeout_s` is failed (ended
        and restarted) like one whose synchronous request timed out."""
        timeout_s = self.config.sample_timeout_s
        for i in set(self._in_flight.values()):
            if time.monotonic() - self._owing_since[i] > timeout_s:
                self._in_flight = {ref: j for ref, j in self._in_flight.items() if j != i}
                self._handle_failure(i, GetTimeoutError(
                    f"no answer to a sample request within sample_timeout_s={timeout_s} s"))

    def _top_up_requests(self, max_requests_in_flight: int) -> None:
        counts = [0] * len(self.remote_env_runners)
        for i in self._in_flight.values():
            counts[i] += 1
        for i in self.health.healthy_indices():
            if counts[i] == 0:  # idle until now: the clock for its answer starts
                self._owing_since[i] = time.monotonic()
            for _ in range(max_requests_in_flight - counts[i]):
                self._in_flight[self._request(i)] = i
