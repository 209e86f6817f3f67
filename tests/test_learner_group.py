"""Data-parallel learners: real torch.distributed all-reduce between Ray actors."""

import stat
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import ray
from helpers import assert_learners_updated_together, small_ppo

from rlcourse.algorithms.ppo.ppo import PPOConfig
from rlcourse.algorithms.ppo.ppo_learner import PPOLearner
from rlcourse.core.learner.learner_group import LearnerGroup, shard_episodes
from rlcourse.env.single_agent_env_runner import SingleAgentEnvRunner

pytestmark = pytest.mark.timeout(300)


def _config(**training):
    settings = {"train_batch_size_per_learner": 400, "minibatch_size": 400, "num_epochs": 1, **training}
    return (small_ppo().environment("CartPole-v1").debugging(seed=3)
            .env_runners(num_envs_per_env_runner=4)
            .learners(num_learners=2, num_cpus_per_learner=0.5)
            .training(**settings))


def _episodes(config, learner):
    runner = SingleAgentEnvRunner(config, config.get_env_creator())
    runner.set_weights(learner.get_weights(inference_only=True))
    return runner.sample(num_timesteps=800), runner


def test_shards_are_balanced_and_complete():
    config = _config()
    learner = PPOLearner(config, *SingleAgentEnvRunner(config, config.get_env_creator()).get_spaces())
    episodes, _ = _episodes(config, learner)
    shards = shard_episodes(episodes, 2)
    sizes = [sum(len(e) for e in shard) for shard in shards]
    assert sum(sizes) == sum(len(e) for e in episodes)
    assert abs(sizes[0] - sizes[1]) <= max(len(e) for e in episodes)
    assert sorted(id(e) for s in shards for e in s) == sorted(id(e) for e in episodes)


def test_data_parallel_update_equals_single_learner_update(ray_session):
    config = _config()
    spaces = SingleAgentEnvRunner(config, config.get_env_creator()).get_spaces()
    single = PPOLearner(config, *spaces)
    start = single.get_weights()
    episodes, _ = _episodes(config, single)
    group = LearnerGroup(config, *spaces)
    try:
        group.set_weights(start)
        for _ in range(2):  # two updates on the same batch, one full-batch step each
            single.update(episodes, num_minibatches=1)
            group.update(episodes)
        parallel = group.get_weights()
        moved = max(np.abs(single.get_weights()[k] - start[k]).max() for k in start)
        assert moved > 1e-4  # the update really changed the weights...
        for key, value in single.get_weights().items():  # ...and both ways the same
            np.testing.assert_allclose(parallel[key], value, atol=2e-5, err_msg=key)
    finally:
        group.stop()


def test_all_learners_hold_identical_weights_after_updates(ray_session):
    config = _config(minibatch_size=64, num_epochs=3)
    spaces = SingleAgentEnvRunner(config, config.get_env_creator()).get_spaces()
    group = LearnerGroup(config, *spaces)
    try:
        episodes, runner = _episodes(config, PPOLearner(config, *spaces))
        before = group.get_weights()
        for _ in range(3):
            group.update(episodes)
            runner.set_weights(group.get_weights(inference_only=True))
            episodes = runner.sample(num_timesteps=800)
        assert_learners_updated_together(group, before)
        # On one machine they met in a file only this user can open (torch's TCP store has no
        # authentication), removed with the group.
        store_dir = Path(group._store_dir)
        assert stat.S_IMODE(store_dir.stat().st_mode) == 0o700 and (store_dir / "store").exists()
    finally:
        group.stop()
    assert not store_dir.exists()


class LearnerThatCannotJoin(PPOLearner):
    def setup_distributed(self, *args, **kwargs):
        raise RuntimeError("no rendezvous today")


class CannotJoinConfig(PPOConfig):
    def get_default_learner_class(self) -> type:
        return LearnerThatCannotJoin


ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the actors get these classes


def test_learners_that_fail_to_start_are_ended_with_the_error(ray_session):
    """Before, the learner actors outlived the error (no Algorithm held the group to stop it), and
    their CPUs stayed taken until the traceback was gone: in a notebook, until the kernel's end."""
    config = (small_ppo(CannotJoinConfig).environment("CartPole-v1")
              .learners(num_learners=2, num_cpus_per_learner=0.5))
    spaces = SingleAgentEnvRunner(config, config.get_env_creator()).get_spaces()
    with pytest.raises(Exception, match="no rendezvous today") as error:
        LearnerGroup(config, *spaces)
    deadline = time.monotonic() + 20
    while ray.available_resources().get("CPU", 0) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ray.available_resources().get("CPU", 0) == 2, error  # the traceback still held here
