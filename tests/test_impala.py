"""IMPALA: asynchronous sampling really overlaps learning, and bad settings are named. (Learning
CartPole: tests/test_learning.py.)"""

import sys
import time

import numpy as np
import pytest
import ray.cloudpickle
from helpers import small_impala

from rlcourse.algorithms.impala.impala import IMPALAConfig
from rlcourse.algorithms.impala.impala_learner import IMPALALearner
from rlcourse.utils.validation import ConfigError

pytestmark = pytest.mark.timeout(400)


# Long enough that two runners sample 3 batches per update even on a 2-core machine that is busy
# with another test lane: 1,500 env steps/s together for batches of 500.
UPDATE_S = 1.0


class SlowIMPALALearner(IMPALALearner):
    """A learner whose every update takes at least UPDATE_S (sleeping releases the GIL)."""

    def update(self, episodes, num_minibatches=None):
        time.sleep(UPDATE_S)
        return super().update(episodes, num_minibatches)


class SlowIMPALAConfig(IMPALAConfig):
    def get_default_learner_class(self) -> type:
        return SlowIMPALALearner


# Runner actors cannot import this test module: ship the config class to them by value.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _config(config_cls=IMPALAConfig, runners=2, learners=0):
    return (config_cls().environment("CartPole-v1").debugging(seed=0)
            .env_runners(num_env_runners=runners, num_envs_per_env_runner=4,
                         num_cpus_per_env_runner=0.5)
            .learners(num_learners=learners, num_cpus_per_learner=0.5))


def test_runners_keep_sampling_while_the_learner_is_busy(ray_session, algo_factory):
    algo = algo_factory(_config(SlowIMPALAConfig))
    start = time.perf_counter()
    for _ in range(4):
        result = algo.train()
    elapsed = time.perf_counter() - start
    sampled = result["num_env_steps_sampled_lifetime"]
    trained = result["num_env_steps_trained_lifetime"]
    updates = result["learners"]["default_policy"]["num_updates_lifetime"]
    # A synchronous algorithm would sample one batch per update; here runners sample throughout.
    assert updates <= elapsed / UPDATE_S + 1
    assert sampled >= 3 * trained, (sampled, trained)
    assert result["learner_queue"]["num_drops_lifetime"] > 0  # the bounded queue overflowed
    # The mean lag of the updates' data: under the oldest queued batch's age (queue, update, in flight).
    assert 0 <= result["learners"]["default_policy"]["policy_lag"] <= algo.config.learner_queue_size + 2


def test_a_local_runner_stays_one_batch_ahead_of_the_learner(ray_session, algo_factory):
    algo = algo_factory(_config(runners=0))
    for _ in range(20):
        result = algo.train()
    # Sampling in the driver's thread would otherwise starve the learner thread (it shares Python's
    # lock), fill the queue and drop most batches: trained/sampled was ~0.14 before the fix.
    assert result["learner_queue"]["num_drops_lifetime"] == 0
    sampled, trained = result["num_env_steps_sampled_lifetime"], result["num_env_steps_trained_lifetime"]
    assert trained >= 0.5 * sampled, (sampled, trained)
    # Data is at most a batch or two old, not as old as the whole queue (learner_queue_size=4).
    assert result["learners"]["default_policy"]["policy_lag"] <= 3


def test_runners_receive_new_weights(ray_session, algo_factory):
    algo = algo_factory(_config())
    for _ in range(5):
        algo.train()
    versions = algo.env_runner_group.foreach_env_runner(lambda r: r.weights_seq_no)
    learner_version = algo.learner_thread.num_updates  # read after: it only grows
    # Every runner holds the last weights the driver broadcast (each train() loop sends the learner
    # thread's newest). The learner may since have finished the update in progress, the queued
    # batches and one batch added after the broadcast (a loop adds at most 2 x 200 < 500 steps).
    assert set(versions) == {algo.env_runner_group.weights_seq_no}, versions
    assert learner_version >= 5 and learner_version - versions[0] <= algo.config.learner_queue_size + 2


@pytest.mark.parametrize("learners", [1, 2])
def test_remote_learners_update_together(learners, ray_session, algo_factory):
    algo = algo_factory(_config(runners=1, learners=learners))
    before = algo.learner_group.get_weights()
    for _ in range(3):
        result = algo.train()
    assert result["learners"]["default_policy"]["num_updates_lifetime"] >= 3
    # The learner thread may be mid-update: read the learners between two updates (its lock),
    # or one learner may answer before the next update and the other after it.
    with algo.learner_thread.lock:
        weights = algo.learner_group.foreach_learner("get_weights")
    assert any(not np.array_equal(weights[0][k], before[k]) for k in before)
    for other in weights[1:]:
        for key in before:
            np.testing.assert_array_equal(weights[0][key], other[key])


@pytest.mark.parametrize(("settings", "setting"), [
    ({"vtrace_clip_rho_threshold": 0.0}, "vtrace_clip_rho_threshold"),
    ({"vtrace_clip_pg_rho_threshold": -1.0}, "vtrace_clip_pg_rho_threshold"),
    ({"learner_queue_size": 0}, "learner_queue_size"),
    ({"broadcast_interval": 0}, "broadcast_interval"),
    ({"vtrace": "yes"}, "vtrace"),
    ({"minibatch_size": 100}, "minibatch_size"),  # IMPALA cannot split a batch for V-trace
])
def test_bad_settings_are_named(settings, setting):
    config = small_impala().environment("CartPole-v1").training(**settings)
    with pytest.raises(ConfigError) as err:
        config.validate()
    assert err.value.setting == setting and setting in str(err.value)


def test_requests_in_flight_are_an_env_runners_setting_as_in_rllib():
    config = small_impala().environment("CartPole-v1").env_runners(
        max_requests_in_flight_per_env_runner=0)
    with pytest.raises(ConfigError, match="max_requests_in_flight_per_env_runner=0"):
        config.validate()
    with pytest.raises(ConfigError, match=r"set with config.env_runners\(max_requests_in_flight"):
        small_impala().training(max_requests_in_flight_per_env_runner=2)
