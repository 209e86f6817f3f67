"""Shared fixtures: one small, quiet Ray instance for the whole session, shut down at the end, and
algorithms that are always stopped. Helpers that tests import by name are in helpers.py."""

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
