"""PeakTreeMemory counts a process's descendants' memory, and splits the peak into parts."""

import subprocess
import sys
import time

import pytest

from rlcourse.course.process_memory import PeakTreeMemory

pytestmark = pytest.mark.timeout(60)

HOLD_200_MIB = "b = bytearray(200 * 2**20); import time; time.sleep(3)"
LAUNCH_THE_CHILD = ("import subprocess, sys; "
                    "sys.exit(subprocess.call([sys.executable, '-c', sys.argv[1]]))")


def test_peak_includes_a_child_that_allocates_and_splits_it_by_part():
    # A launcher of its own is the root, so the tree holds exactly the launcher and its child. Under
    # the test runner, other children (Ray's processes, say) can end while the bytearray grows, and
    # the peak's moment then comes before the child holds all of it (CI saw 141 MiB of 200).
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCH_THE_CHILD, HOLD_200_MIB])

    def part_of(process):
        return "launcher" if process.pid == launcher.pid else "child"

    memory = PeakTreeMemory(launcher.pid, include_root=True, interval_s=0.05, part_of=part_of)
    memory.start()
    try:
        launcher.wait(timeout=30)
    finally:
        peak = memory.stop()
    assert launcher.returncode == 0
    assert peak >= 200  # the child's bytearray, touched page by page
    assert memory.parts["child"] >= 200 and memory.counts["child"] == 1
    assert memory.parts["launcher"] > 1 and memory.counts["launcher"] == 1  # an interpreter
    assert peak == pytest.approx(memory.parts.total())


def test_root_alone_is_counted_only_when_asked():
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        without_root = PeakTreeMemory(sleeper.pid, include_root=False, interval_s=0.05)
        with_root = PeakTreeMemory(sleeper.pid, include_root=True, interval_s=0.05)
        for memory in (without_root, with_root):
            memory.start()
        deadline = time.monotonic() + 30  # a busy machine starts Python slowly
        while with_root.peak_mib <= 1 and time.monotonic() < deadline:  # a Python interpreter
            time.sleep(0.05)
        assert with_root.stop() > 1
        assert without_root.stop() == 0  # the sleeper has no children
    finally:
        sleeper.kill()
        sleeper.wait()
