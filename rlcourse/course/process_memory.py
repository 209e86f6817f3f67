"""What a process tree costs a machine: the peak of its summed PSS, sampled in a thread.

PSS (proportional set size) counts a process's private pages plus its share of the pages it shares
with others, so summing it over a kernel and every Ray process it starts neither misses Ray's
processes nor counts torch's shared libraries once per process. Used by tools/run_lesson.py,
benchmarks/binder_profile.py and the nbval memory check in lessons/conftest.py.
"""

import contextlib
import threading
from collections import Counter
from collections.abc import Callable

import psutil

MIB = 1024 * 1024


class PeakTreeMemory(threading.Thread):
    """Samples the summed PSS (MiB) of `pid`'s descendants (and `pid` itself if `include_root`)
    every `interval_s` until stopped; keeps the peak and, per `part_of(process)` label, what made
    it up at that moment."""

    def __init__(self, pid: int, include_root: bool = True, interval_s: float = 0.2,
                 part_of: Callable[[psutil.Process], str] = lambda process: "all"):
        super().__init__(daemon=True)
        self.root, self.include_root = psutil.Process(pid), include_root
        self.interval_s, self.part_of = interval_s, part_of
        self.peak_mib = 0.0
        self.parts: Counter = Counter()   # label -> MiB at the peak
        self.counts: Counter = Counter()  # label -> processes at the peak
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            try:
                processes = [*([self.root] if self.include_root else []),
                             *self.root.children(recursive=True)]
            except psutil.NoSuchProcess:  # the root ended
                return
            parts, counts = Counter(), Counter()
            for process in processes:
                with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):  # it ended
                    label = self.part_of(process)
                    parts[label] += process.memory_full_info().pss / MIB
                    counts[label] += 1
            if parts.total() > self.peak_mib:
                self.peak_mib, self.parts, self.counts = parts.total(), parts, counts
            self._stop_event.wait(self.interval_s)

    def stop(self) -> float:
        """Stop sampling; the peak in MiB."""
        self._stop_event.set()
        self.join()
        return self.peak_mib
