"""check_run_episode accepts the RL loop and explains each typical mistake."""

import pytest

from rlcourse.course.exercises import ExerciseError, check_run_episode


def right(env, policy, seed):
    obs, _ = env.reset(seed=seed)
    total, done = 0.0, False
    while not done:
        obs, reward, terminated, truncated, _ = env.step(policy(obs))
        total += reward
        done = terminated or truncated
    return total


def only_terminated(env, policy, seed):
    obs, _ = env.reset(seed=seed)
    total, terminated = 0.0, False
    while not terminated:
        obs, reward, terminated, _, _ = env.step(policy(obs))
        total += reward
    return total


def counts_steps(env, policy, seed):
    obs, _ = env.reset(seed=seed)
    steps, done = 0, False
    while not done:
        obs, _, terminated, truncated, _ = env.step(policy(obs))
        steps += 1
        done = terminated or truncated
    return steps


def no_seed(env, policy, seed):
    return right(env, policy, None)


def one_step(env, policy, seed):
    obs, _ = env.reset(seed=seed)
    return env.step(policy(obs))[1]


def test_the_right_loop_passes(capsys):
    check_run_episode(right)
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize(("wrong", "message"), [
    (only_terminated, "after the episode had ended"),
    (counts_steps, "Add up the rewards themselves"),
    (no_seed, "Reset the env with the seed"),
    (one_step, "returned before the episode ended"),
    (lambda env, policy, seed: 1 / 0, "raised ZeroDivisionError"),
])
def test_each_mistake_gets_its_hint(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_run_episode(wrong)
