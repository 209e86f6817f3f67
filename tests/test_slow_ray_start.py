"""A busy machine: Ray gives a new node 30 s to register and then fails, leaving its processes
running. init_ray's start (local_ray.start_retrying_a_slow_node) stops what that start left and
starts once more; any other error is the learner's to read, and no process of theirs is touched.
The real case (a node registering after 40 s) was checked by hand: see the issue 29 note."""

import subprocess
import sys
from pathlib import Path

import pytest
import ray

from rlcourse.utils.local_ray import start_retrying_a_slow_node

pytestmark = pytest.mark.timeout(60)

# A script from Ray's package that waits on its stdin: it stands for a Ray process.
RAY_PROCESS = [sys.executable, str(Path(ray.__file__).parent / "_private" / "ray_process_reaper.py")]
OTHER_PROCESS = [sys.executable, "-c", "import sys; sys.stdin.read()"]
TIMED_OUT = ("The current node timed out during startup. This could happen because some of the "
             "raylet failed to startup or the GCS has become overloaded.")


def waiting(command: list[str]) -> subprocess.Popen:
    return subprocess.Popen(command, stdin=subprocess.PIPE)


@pytest.fixture
def processes():
    started: list[subprocess.Popen] = []
    yield started
    for process in started:
        process.kill()
        process.wait()


def test_a_node_that_missed_rays_start_up_wait_is_stopped_and_started_again(processes):
    processes.append(waiting(RAY_PROCESS))  # a Ray process from before: not this start's
    earlier = processes[0]
    starts = []

    def start():
        starts.append(waiting(RAY_PROCESS))
        processes.extend([starts[-1], waiting(OTHER_PROCESS)])
        if len(starts) == 1:
            raise Exception(TIMED_OUT)

    start_retrying_a_slow_node(start)
    assert len(starts) == 2
    assert starts[0].wait(timeout=10) is not None  # the half-started node was stopped
    assert starts[1].poll() is None  # the second start's node runs
    assert earlier.poll() is None
    assert all(p.poll() is None for p in processes if p.args == OTHER_PROCESS)


def test_any_other_start_error_is_raised_at_once_and_stops_nothing(processes):
    starts = []

    def start():
        starts.append(waiting(RAY_PROCESS))
        processes.append(starts[-1])
        raise ValueError("object_store_memory is too small")

    with pytest.raises(ValueError, match="object_store_memory"):
        start_retrying_a_slow_node(start)
    assert len(starts) == 1
    assert starts[0].poll() is None


def test_a_second_time_out_is_raised_for_the_learner_to_read(processes):
    starts = []

    def start():
        starts.append(waiting(RAY_PROCESS))
        processes.append(starts[-1])
        raise Exception(TIMED_OUT)

    with pytest.raises(Exception, match="timed out during startup"):
        start_retrying_a_slow_node(start)
    assert len(starts) == 2
