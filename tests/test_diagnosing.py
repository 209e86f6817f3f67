"""Lesson 11's helpers: the broken CartPoles do what they claim, and event files read back what
tensorboardX wrote (a corrupt one fails loudly)."""

import numpy as np
import pytest

from rlcourse.course.diagnosing import BUGS, break_config, flatten
from rlcourse.course.diagnosing_envs import SENSOR_OFFSET, SENSOR_SCALE, broken_cartpole
from rlcourse.course.event_files import find_event_files, read_scalars

pytestmark = pytest.mark.timeout(60)


def run_out(env, seed=0):
    """Step with alternating actions until the episode ends; (steps, last terminated, truncated)."""
    env.reset(seed=seed)
    for step in range(1, 1000):
        _, _, terminated, truncated, _ = env.step(step % 2)
        if terminated or truncated:
            return step, terminated, truncated
    raise AssertionError("the episode never ended")


def test_the_time_limit_is_reported_as_a_termination_only_with_the_bug():
    steps, terminated, truncated = run_out(broken_cartpole({"max_episode_steps": 5}))
    assert (steps, terminated, truncated) == (5, False, True)
    steps, terminated, truncated = run_out(broken_cartpole({"max_episode_steps": 5,
                                                            "truncation_as_termination": True}))
    assert (steps, terminated, truncated) == (5, True, False)


def test_sensor_units_and_reward_scale_change_only_what_they_name():
    plain, sensor = broken_cartpole(), broken_cartpole({"sensor_units": True,
                                                        "reward_scale": 100.0})
    obs, _ = plain.reset(seed=3)
    scaled, _ = sensor.reset(seed=3)
    np.testing.assert_allclose(scaled, obs * SENSOR_SCALE + SENSOR_OFFSET, rtol=1e-6)
    assert sensor.observation_space.contains(scaled)
    _, reward, *_ = plain.step(0)
    _, scaled_reward, *_ = sensor.step(0)
    assert scaled_reward == 100.0 * reward


def test_every_bug_changes_the_config_and_leaves_the_original_alone():
    from rlcourse import PPOConfig
    config = PPOConfig().environment("CartPole-v1").training(  # the lesson's healthy settings
        lr=3e-3, train_batch_size_per_learner=1000, minibatch_size=250, vf_clip_param=1000.0)
    before = config.to_dict()
    for bug in BUGS:
        assert break_config(config, bug).to_dict() != before, bug
    assert config.to_dict() == before
    with pytest.raises(KeyError, match="lr_too_high"):
        break_config(config, "lr_too_hi")


def test_results_flatten_as_tune_flattens_them():
    assert flatten({"a": {"b": {"c": 1}}, "d": 2}) == {"a/b/c": 1, "d": 2}


def test_event_files_read_back_what_tensorboardx_wrote(tmp_path):
    from tensorboardX import SummaryWriter
    with SummaryWriter(str(tmp_path)) as writer:
        for step in range(1, 4):
            writer.add_scalar("ray/tune/entropy", 0.5 / step, step)
        writer.add_text("note", "not a scalar", 1)
    path, = find_event_files(tmp_path)
    points = read_scalars(path)["ray/tune/entropy"]
    assert [step for step, _ in points] == [1, 2, 3]
    np.testing.assert_allclose([value for _, value in points], [0.5, 0.25, 0.5 / 3], rtol=1e-6)
    data = bytearray(path.read_bytes())
    data[-6] ^= 0xFF  # a flipped byte inside the last record
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="checksum"):
        read_scalars(path)
    path.write_bytes(bytes(data[:-3]))  # cut short
    with pytest.raises(ValueError, match="truncated|checksum"):
        read_scalars(path)
