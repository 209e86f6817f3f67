"""Shared fixtures: one small, quiet Ray instance for the whole session, shut down at the end."""

import time

import numpy as np
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


def runner_module_in_a_fresh_process(config_class: str, env: str) -> tuple[str, bool]:
    """Validate `config_class` on `env` and build a runner in a fresh Python process; return the
    runner's module class name and whether that process imported torch (runners must not)."""
    import subprocess
    import sys
    import textwrap

    package, name = config_class.rsplit(".", 1)
    code = textwrap.dedent(f"""
        import sys
        from {package} import {name}
        from rlcourse.env.env_runner import EnvRunner
        config = {name}().environment({env!r})
        config.validate()
        runner = EnvRunner(config, config.get_env_creator())
        print(type(runner.module).__name__, "torch" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    module_name, torch_imported = out.stdout.split()
    return module_name, torch_imported == "True"


def assert_learners_updated_together(group, before: dict) -> None:
    """Data-parallel learners moved away from `before` and hold identical weights (one all-reduced
    step each)."""
    first, second = group.foreach_learner("get_weights")
    assert any(not np.array_equal(first[k], before[k]) for k in before)
    for key in first:
        np.testing.assert_array_equal(first[key], second[key], err_msg=key)
