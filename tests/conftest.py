"""Shared fixtures: one small, quiet Ray instance for the whole session, shut down at the end."""

import time

import pytest
import ray

from rlcourse.utils.resources import init_ray


@pytest.fixture(scope="session")
def ray_session():
    """Ray with 2 CPUs (this machine's size) and no dashboard; actors request fractions of them."""
    init_ray(num_cpus=2)
    yield
    ray.shutdown()


@pytest.fixture
def algo_factory():
    """Build algorithms from configs and always stop them, even when the test fails."""
    built = []

    def build(config):
        algo = config.build_algo()
        built.append(algo)
        return algo

    yield build
    for algo in built:
        algo.stop()


def free_cpus_after_release(expected: float, timeout_s: float = 20) -> float:
    """Free CPUs once killed actors have released theirs (Ray updates this within a second)."""
    deadline = time.monotonic() + timeout_s
    while ray.available_resources().get("CPU", 0) < expected and time.monotonic() < deadline:
        time.sleep(0.1)
    return ray.available_resources().get("CPU", 0)
