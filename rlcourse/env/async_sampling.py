"""AsyncRequests: the sample requests an EnvRunnerGroup keeps in flight for asynchronous sampling
(IMPALA's and Ape-X's training_step; the group's `fetch_ready_async_samples`).

The group keeps up to `max_requests_in_flight` sample requests running on each healthy runner,
collects whichever are done with one `ray.wait` (never a `ray.get` in a loop) and tops the requests
up again, so the driver never waits for the slowest runner. This component remembers which runner
each request went to and since when each runner owes an answer: one that owes it for longer than
`sample_timeout_s` is handed back to the group as hung, and failed like one whose synchronous
request timed out (env_runner_group.py handles failures; env_runner_health.py decides whether the
runner is back).
"""

import time
from collections import Counter
from collections.abc import Callable

import ray
from ray.exceptions import GetTimeoutError


class AsyncRequests:
    """Requests in flight (request -> runner index), sent with `send(i)` to the runners that
    `healthy()` names; a runner that owes an answer for over `timeout_s` goes to `on_hung(i, error)`.
    """

    def __init__(self, send: Callable[[int], ray.ObjectRef], healthy: Callable[[], list[int]],
                 on_hung: Callable[[int, Exception], None], timeout_s: float):
        self.send, self.healthy, self.on_hung, self.timeout_s = send, healthy, on_hung, timeout_s
        self.in_flight: dict[ray.ObjectRef, int] = {}
        self.owing_since: dict[int, float] = {}  # runner -> since when it owes an answer

    def top_up(self, max_per_runner: int) -> list[ray.ObjectRef]:
        """Send requests until each healthy runner has `max_per_runner`; all requests in flight."""
        counts = Counter(self.in_flight.values())
        for i in self.healthy():
            if counts[i] == 0:  # idle until now: the clock for its answer starts
                self.owing_since[i] = time.monotonic()
            for _ in range(max_per_runner - counts[i]):
                self.in_flight[self.send(i)] = i
        return list(self.in_flight)

    def answered(self, ref: ray.ObjectRef) -> int:
        """Take the finished request `ref` out of flight; its runner's next answer is due from now.
        Returns the runner's index."""
        i = self.in_flight.pop(ref)
        self.owing_since[i] = time.monotonic()
        return i

    def forget(self, i: int) -> None:
        """Drop runner i's requests (it failed)."""
        self.in_flight = {ref: j for ref, j in self.in_flight.items() if j != i}

    def end_round(self, max_per_runner: int) -> None:
        """After collecting: fail the runners that owe an answer for too long, then top up."""
        for i in set(self.in_flight.values()):
            if time.monotonic() - self.owing_since[i] > self.timeout_s:
                self.forget(i)
                self.on_hung(i, GetTimeoutError(
                    f"no answer to a sample request within sample_timeout_s={self.timeout_s} s"))
        self.top_up(max_per_runner)
