"""Resource requests the machine cannot meet fail within seconds, naming the setting."""

import subprocess
import sys
import time

import pytest
import ray
import torch
from helpers import free_cpus_after_release, small_ppo

from rlcourse.utils import resources
from rlcourse.utils.validation import ConfigError

pytestmark = pytest.mark.timeout(120)
# A GPU request fails only where there is none; on a machine with one, tests/test_gpu_learner.py uses it.
no_gpu_here = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")


def _config():
    return small_ppo().environment("CartPole-v1")


@pytest.fixture
def short_waits(monkeypatch):
    """Requests here can never be met, so the waits for released CPUs and for a placement group
    are idle: shorten them (the failure, its message and the cleanup are the same)."""
    monkeypatch.setattr(resources, "RELEASE_WAIT_S", 1.0)
    monkeypatch.setattr(resources, "PLACEMENT_TIMEOUT_S", 2.0)


@pytest.mark.parametrize(("setter", "settings", "setting"), [
    pytest.param("learners", {"num_learners": 0, "num_gpus_per_learner": 1}, "num_gpus_per_learner",
                 marks=no_gpu_here),
    pytest.param("learners", {"num_learners": 1, "num_gpus_per_learner": 1}, "num_gpus_per_learner",
                 marks=no_gpu_here),
    pytest.param("env_runners", {"num_env_runners": 1, "num_gpus_per_env_runner": 1},
                 "num_gpus_per_env_runner", marks=no_gpu_here),
    ("env_runners", {"num_env_runners": 3, "num_cpus_per_env_runner": 1}, "num_cpus_per_env_runner"),
    ("learners", {"num_learners": 2, "num_cpus_per_learner": 2}, "num_cpus_per_learner"),
])
def test_unmeetable_requests_fail_fast(setter, settings, setting, ray_session, short_waits):
    config = getattr(_config(), setter)(**settings)
    start = time.perf_counter()
    with pytest.raises(ConfigError) as err:
        config.build_algo()
    # A check and at most one short wait (short_waits): far under 60 s, on any machine, where an
    # actor that asked for what no node has would wait for ever.
    assert time.perf_counter() - start < 60
    assert err.value.setting == setting and setting in str(err.value)
    # Nothing half-built is left holding the cluster's CPUs.
    assert free_cpus_after_release(2) == pytest.approx(2)


GPU_LEARNER_IN_A_FRESH_PROCESS = """
import time
from rlcourse.algorithms.ppo.ppo import PPOConfig
from rlcourse.utils.validation import ConfigError
config = (PPOConfig().environment("CartPole-v1").env_runners(num_env_runners=0)
          .learners(num_learners=1, num_gpus_per_learner=1))
start = time.perf_counter()
try:
    config.build_algo()
except ConfigError as e:
    print(e.setting, round(time.perf_counter() - start))
"""


@no_gpu_here
@pytest.mark.timeout(330)  # the process: Python, torch, Ray's start-up (twice at worst), the check
def test_a_gpu_request_fails_fast_when_build_algo_starts_ray_itself():
    """No Ray yet: build_algo starts it, then checks the request (it must not check before)."""
    result = subprocess.run([sys.executable, "-c", GPU_LEARNER_IN_A_FRESH_PROCESS],
                            capture_output=True, text=True, timeout=300, check=True)
    setting, seconds = result.stdout.split()
    assert setting == "num_gpus_per_learner"
    # Ray's start-up, twice at worst (local_ray retries a node that missed its 30 s start-up wait);
    # a hanging learner actor would wait LearnerGroup's 180 s
    assert int(seconds) < 170


def test_fractional_cpus_let_more_runners_share_two_cores(ray_session, algo_factory):
    algo = algo_factory(_config().env_runners(num_env_runners=4, num_cpus_per_env_runner=0.25))
    assert algo.env_runner_group.num_remote_env_runners == 4
    pids = set(algo.env_runner_group.foreach_env_runner(lambda r: __import__("os").getpid()))
    assert len(pids) == 4
    # Runners run the default MLP in NumPy: torch never enters their processes.
    assert not any(algo.env_runner_group.foreach_env_runner(
        lambda r: "torch" in __import__("sys").modules))


def test_stop_releases_actors(ray_session):
    free_cpus_after_release(2)
    algo = _config().env_runners(num_env_runners=2, num_cpus_per_env_runner=0.5).build_algo()
    assert ray.available_resources().get("CPU", 0) == pytest.approx(1)
    algo.stop()
    assert free_cpus_after_release(2) == pytest.approx(2)


@pytest.mark.parametrize("strategy", ["PACK", "SPREAD"])
def test_placement_strategy_puts_runners_in_a_placement_group(strategy, ray_session, algo_factory):
    algo = algo_factory(_config().env_runners(num_env_runners=2, num_cpus_per_env_runner=0.5)
                        .resources(placement_strategy=strategy))
    group = algo.env_runner_group
    table = ray.util.placement_group_table(group.placement_group)
    assert table["strategy"] == strategy and table["state"] == "CREATED"
    assert len(table["bundles"]) == 2
    here = ray.get_runtime_context().get_node_id()
    assert group.foreach_env_runner(lambda runner: runner.node_id) == [here] * 2  # one node here
    algo.train()


def test_a_placement_the_cluster_cannot_make_fails_fast_and_names_the_setting(ray_session,
                                                                             short_waits):
    config = (_config().env_runners(num_env_runners=2, num_cpus_per_env_runner=0.5)
              .resources(placement_strategy="STRICT_SPREAD"))  # two nodes needed, one exists
    start = time.perf_counter()
    with pytest.raises(ConfigError) as err:
        config.build_algo()
    assert err.value.setting == "placement_strategy" and "resources(" in str(err.value)
    assert time.perf_counter() - start < 60  # PLACEMENT_TIMEOUT_S, 2 s here; never placed otherwise
    assert free_cpus_after_release(2) == pytest.approx(2)
    assert not [pg for pg in ray.util.placement_group_table().values() if pg["state"] == "CREATED"]


def test_a_custom_resource_no_node_has_fails_fast_and_names_the_setting(ray_session):
    config = _config().env_runners(num_env_runners=1, num_cpus_per_env_runner=0.5,
                                   custom_resources_per_env_runner={"gpu-node": 1})
    start = time.perf_counter()
    with pytest.raises(ConfigError) as err:
        config.build_algo()
    assert err.value.setting == "custom_resources_per_env_runner" and "gpu-node" in str(err.value)
    assert time.perf_counter() - start < 60  # checked before any actor starts: no wait at all


def _a_cluster(monkeypatch, gpus: float, free_after_calls: int) -> list:
    """A Ray cluster of `gpus` GPUs, all held by an actor killed a moment ago: they read as taken
    for the first `free_after_calls` reads of the free resources (Ray releases them within seconds).
    Returns the list of reads, one entry per read."""
    reads = []

    def available() -> dict:
        reads.append(len(reads))
        return {"GPU": gpus if len(reads) > free_after_calls else 0}

    monkeypatch.setattr(ray, "is_initialized", lambda: True)
    monkeypatch.setattr(resources, "current_placement_group", lambda: None)
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"GPU": gpus})
    monkeypatch.setattr(ray, "available_resources", available)
    return reads


@pytest.mark.parametrize("config", [
    _config().learners(num_learners=1, num_gpus_per_learner=1),
    _config().env_runners(num_env_runners=2, num_gpus_per_env_runner=0.5)])
def test_a_gpu_just_released_by_a_stopped_algorithm_is_waited_for(config, monkeypatch):
    """Seen on an H100: stop() an Algorithm whose learner had the GPU, build the next one at once,
    and the check read the GPU as taken."""
    reads = _a_cluster(monkeypatch, gpus=1, free_after_calls=3)
    resources.check_gpus(config)  # no ConfigError: it read again until the GPU was free
    assert len(reads) > 3


@pytest.mark.parametrize(("gpus", "free_after_calls"), [(1, 10**5), (0.5, 0)])
def test_gpus_the_cluster_lacks_fail_naming_the_setting(gpus, free_after_calls, monkeypatch,
                                                        short_waits):
    """Held past the wait (RELEASE_WAIT_S, 1 s here), or fewer in the whole cluster (no wait)."""
    _a_cluster(monkeypatch, gpus=gpus, free_after_calls=free_after_calls)
    start = time.perf_counter()
    with pytest.raises(ConfigError) as err:
        resources.check_gpus(_config().learners(num_learners=1, num_gpus_per_learner=1))
    assert err.value.setting == "num_gpus_per_learner" and "1 learners x 1 GPU" in str(err.value)
    waited = time.perf_counter() - start
    assert 1 <= waited < 5 if gpus >= 1 else waited < 0.5


@pytest.mark.parametrize(("config", "setting"), [
    (_config().env_runners(num_env_runners=1, num_gpus_per_env_runner=1)
     .learners(num_learners=1, num_gpus_per_learner=1), "num_gpus_per_env_runner"),
    (_config().env_runners(num_env_runners=1, num_gpus_per_env_runner=0.25)
     .learners(num_learners=1, num_gpus_per_learner=1), "num_gpus_per_learner"),
    (_config().env_runners(num_env_runners=1, num_gpus_per_env_runner=0.75)
     .evaluation(evaluation_num_env_runners=1), "num_gpus_per_env_runner")])
def test_runners_and_learners_together_must_fit_the_gpus(config, setting, monkeypatch):
    """Each of these fits one GPU alone; together (evaluation runners included) they ask for more,
    and Ray would wait forever for the actor that does not fit. The error names the larger ask."""
    _a_cluster(monkeypatch, gpus=1, free_after_calls=0)
    with pytest.raises(ConfigError) as err:
        resources.check_gpus(config)
    assert err.value.setting == setting and "but the Ray cluster has 1 free" in str(err.value)
