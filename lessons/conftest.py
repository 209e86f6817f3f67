"""For nbval (`make test`): each lesson must fit Binder's 2 GiB, its Ray processes included.

nbval runs every lesson in a kernel of its own, started by this pytest process. While a lesson's
cells run, a thread samples the summed PSS of pytest's descendants (the kernel and every process
it starts: Ray's raylet, GCS, agents, workers and actors) every 0.5 s (a sample costs ~2 ms of CPU
per process, so no more often: lessons measure speed-ups); the lesson's last cell fails if the peak
passed 2 GiB, and the peaks are listed at the end of the run. This is the measure of
benchmarks/binder_profile.py, without running the lessons a second time.
"""

import os

import pytest

from rlcourse.course.process_memory import PeakTreeMemory

LIMIT_MIB = 2048

FIRST_CELLS: set[str] = set()
LAST_CELLS: dict[str, str] = {}  # node id of a lesson's last cell -> the lesson's file name
PEAKS: dict[str, float] = {}
_monitor: PeakTreeMemory | None = None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    lessons: dict[pytest.Collector, list[pytest.Item]] = {}
    for item in items:
        lessons.setdefault(item.parent, []).append(item)
    for lesson, cells in lessons.items():
        FIRST_CELLS.add(cells[0].nodeid)
        LAST_CELLS[cells[-1].nodeid] = lesson.name


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """Start sampling at a lesson's first cell (its kernel is up); check the peak at its last."""
    global _monitor
    if item.nodeid in FIRST_CELLS:
        _monitor = PeakTreeMemory(os.getpid(), include_root=False, interval_s=0.5)
        _monitor.start()
    try:
        return (yield)
    finally:
        if item.nodeid in LAST_CELLS and _monitor is not None:
            lesson, peak = LAST_CELLS[item.nodeid], _monitor.stop()
            _monitor, PEAKS[lesson] = None, peak
            assert peak <= LIMIT_MIB, (f"{lesson} used {peak:,.0f} MiB at its peak (kernel and Ray "
                                       f"processes): more than Binder's {LIMIT_MIB:,} MiB")


def pytest_terminal_summary(terminalreporter) -> None:
    if PEAKS:
        terminalreporter.section(f"peak memory per lesson (kernel + Ray; Binder: {LIMIT_MIB} MiB)")
        for lesson, peak in PEAKS.items():
            terminalreporter.write_line(f"{lesson}: {peak:,.0f} MiB")
