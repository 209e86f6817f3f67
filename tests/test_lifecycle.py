"""Life cycle: a stopped Algorithm, or one whose Ray was shut down, says so clearly, and never
starts a Ray behind the learner's back."""

import pytest
import ray
from helpers import small_ppo

from rlcourse.algorithms.algorithm import AlgorithmStopped
from rlcourse.algorithms.ppo.ppo import PPOConfig
from rlcourse.utils.resources import init_ray

pytestmark = pytest.mark.timeout(180)

SMALL_BATCH = {"train_batch_size_per_learner": 200, "minibatch_size": 100, "num_epochs": 1}


def small_config(num_env_runners: int = 0) -> PPOConfig:
    return (small_ppo().environment("CartPole-v1").training(**SMALL_BATCH)
            .env_runners(num_env_runners=num_env_runners, num_cpus_per_env_runner=0.5))


@pytest.mark.parametrize("call", [
    lambda algo, tmp_path: algo.train(),
    lambda algo, tmp_path: algo.evaluate(),
    lambda algo, tmp_path: algo.save_to_path(tmp_path / "ckpt"),
    lambda algo, tmp_path: algo.get_module(),
    lambda algo, tmp_path: algo.compute_actions([[0.0, 0.0, 0.0, 0.0]]),
], ids=["train", "evaluate", "save_to_path", "get_module", "compute_actions"])
def test_a_stopped_algorithm_says_so(call, tmp_path):
    algo = small_config().build_algo()
    algo.train()
    algo.stop()
    with pytest.raises(AlgorithmStopped, match=r"was stopped; build a new one with "
                                               r"config.build_algo\(\)"):
        call(algo, tmp_path)
    algo.stop()  # still safe to call again


def test_after_ray_shutdown_train_fails_clearly_and_starts_no_ray(ray_session, tmp_path):
    algo = small_config(num_env_runners=1).build_algo()
    try:
        algo.train()
        ray.shutdown()
        for call in (algo.train, algo.evaluate, lambda: algo.save_to_path(tmp_path / "ckpt")):
            with pytest.raises(AlgorithmStopped, match="Ray was shut down under this Algorithm"):
                call()
        assert not ray.is_initialized()
        algo.stop()  # nothing to kill: the actors ended with their Ray
        assert not ray.is_initialized()
    finally:
        algo.stop()
        init_ray(num_cpus=2)  # the session's other tests expect their Ray


def test_a_new_ray_is_not_mistaken_for_the_old_one(ray_session):
    algo = small_config(num_env_runners=1).build_algo()
    try:
        ray.shutdown()
        init_ray(num_cpus=2)  # e.g. a notebook cell that starts Ray again
        with pytest.raises(AlgorithmStopped, match="Ray was shut down under this Algorithm"):
            algo.train()
    finally:
        algo.stop()
