import time
from collections import Counter
from collections.abc import Callable

import ray
from ray.exceptions import GetTimeoutError


class AsyncRequests:
    """The sample requests an EnvRunnerGroup keeps in flight for asynchronous sampling (IMPALA,
    Ape-X): up to `max_per_runner` per healthy runner, sent with `send(i)`, so the driver never waits
    for the slowest runner. A runner that owes an answer for over `timeout_s` goes to `on_hung(i,
    error)`, failed like a synchronous request that timed out."""

    def __init__(self, send: Callable[[int], ray.ObjectRef], healthy: Callable[[], list[int]],
                 on_hung: Callable[[int, Exception], None], timeout_s: float):
        self.send, self.healthy, self.on_hung, self.timeout_s = send, healthy, on_hung, timeout_s
        self.in_flight: dict[ray.ObjectRef, int] = {}  # request -> runner index
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
        """Take the finished request `ref` out of flight (its runner's next answer is due from now);
        returns the runner's index."""
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
