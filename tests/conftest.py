"""Shared fixtures: one small, quiet Ray instance for the whole session, shut down at the end, and
algorithms that are always stopped. Helpers that tests import by name are in helpers.py."""

import os

# One torch (OpenMP) and one NumPy (OpenBLAS) thread in this process and all it starts, as Ray gives
# runner actors: on a busy 2-core machine (CI runs the lessons alongside) a second thread spin-waits
# on every small matrix product; the local runners' NumPy forward passes were 10x slower at load 20.
# Set before torch or NumPy loads; the same results with 1 thread or 2.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pytest  # noqa: E402
import ray  # noqa: E402

from rlcourse.utils.resources import init_ray  # noqa: E402


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
