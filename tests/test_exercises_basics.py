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


def acts_on_the_first_observation(env, policy, seed):
    first, _ = env.reset(seed=seed)
    total, done = 0.0, False
    while not done:
        _, reward, terminated, truncated, _ = env.step(policy(first))  # obs never updated
        total += reward
        done = terminated or truncated
    return total


def random_actions(env, policy, seed):
    obs, _ = env.reset(seed=seed)
    total, done = 0.0, False
    while not done:
        obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        total += reward
        done = terminated or truncated
    return total


def drops_the_last_reward_on_truncation(env, policy, seed):
    obs, _ = env.reset(seed=seed)
    total = 0.0
    while True:
        obs, reward, terminated, truncated, _ = env.step(policy(obs))
        if truncated:  # "time's up": the last reward is thrown away
            return total
        total += reward
        if terminated:
            return total


def skips_the_first_reward(env, policy, seed):
    obs, _ = env.reset(seed=seed)
    obs, _, terminated, truncated, _ = env.step(policy(obs))  # a "warm-up" step, reward dropped
    total, done = 0.0, terminated or truncated
    while not done:
        obs, reward, terminated, truncated, _ = env.step(policy(obs))
        total += reward
        done = terminated or truncated
    return total


def counts_the_last_reward_twice(env, policy, seed):
    obs, _ = env.reset(seed=seed)
    total, done, reward = 0.0, False, 0.0
    while not done:
        obs, reward, terminated, truncated, _ = env.step(policy(obs))
        total += reward
        done = terminated or truncated
    return total + reward  # "and the final reward"


def overwrites_the_total(env, policy, seed):
    obs, _ = env.reset(seed=seed)
    total, done = 0.0, False
    while not done:
        obs, reward, terminated, truncated, _ = env.step(policy(obs))
        total = reward
        done = terminated or truncated
    return total


def mean_reward(env, policy, seed):
    obs, _ = env.reset(seed=seed)
    rewards, done = [], False
    while not done:
        obs, reward, terminated, truncated, _ = env.step(policy(obs))
        rewards.append(reward)
        done = terminated or truncated
    return sum(rewards) / len(rewards)


def old_gym_reset(env, policy, seed):
    obs = env.reset(seed=seed)  # older gym: the observation alone
    total, done = 0.0, False
    while not done:
        obs, reward, terminated, truncated, _ = env.step(policy(obs))
        total += reward
        done = terminated or truncated
    return total


def old_gym_step(env, policy, seed):
    obs, _ = env.reset(seed=seed)
    total, done = 0.0, False
    while not done:
        obs, reward, done, _ = env.step(policy(obs))  # older gym: four values
        total += reward
    return total


def steps_outside_the_loop(env, policy, seed):
    obs, _ = env.reset(seed=seed)
    total, done = 0.0, False
    while not done:
        action = policy(obs)
    obs, reward, terminated, truncated, _ = env.step(action)  # dedented by mistake
    return total + reward


def test_the_right_loop_passes_and_is_returned(capsys):
    assert check_run_episode(right) is right
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize(("wrong", "message"), [
    (only_terminated, "after the episode had ended"),
    (counts_steps, "that is the number of steps \\(7\\). Add up the rewards themselves"),
    (no_seed, "Reset the env with the seed"),
    (one_step, "returned before the episode ended"),
    (acts_on_the_first_observation, "old observation"),
    (lambda env, policy, seed: 1 / 0, "raised ZeroDivisionError"),
    (random_actions, "asked the policy for 0 actions"),
    (drops_the_last_reward_on_truncation, "the last step's reward \\(1.5\\) is missing"),
    (skips_the_first_reward, "the first step's reward \\(0.5\\) is missing"),
    (counts_the_last_reward_twice, "the last step's reward \\(1.5\\) is counted twice"),
    (overwrites_the_total, "the last step's reward alone.*not total = reward"),
    (mean_reward, "the mean reward per step"),
    (old_gym_reset, "returns both.*obs, info = env.reset"),
    (old_gym_step, "too many values to unpack.*five values"),
    (steps_outside_the_loop, "10,000 actions without stepping the env"),
], ids=["stops-only-on-terminated", "counts-steps-not-rewards", "ignores-the-seed",
        "returns-after-one-step", "acts-on-the-first-observation", "raises",
        "random-actions", "drops-the-last-reward-on-truncation",
        "skips-the-first-reward", "last-reward-twice", "overwrites-the-total", "mean-reward",
        "old-gym-reset", "old-gym-step", "step-outside-the-loop"])
def test_run_episode_rejects_each_mistake_with_its_hint(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_run_episode(wrong)


def forgets_to_return(env, policy, seed):
    right(env, policy, seed)


def returns_the_rewards(env, policy, seed):
    obs, _ = env.reset(seed=seed)
    rewards, done = [], False
    while not done:
        obs, reward, terminated, truncated, _ = env.step(policy(obs))
        rewards.append(reward)
        done = terminated or truncated
    return rewards


def resets_twice(env, policy, seed):
    env.reset(seed=seed)
    obs, _ = env.reset()  # a second episode, no longer the seeded one
    total, done = 0.0, False
    while not done:
        obs, reward, terminated, truncated, _ = env.step(policy(obs))
        total += reward
        done = terminated or truncated
    return total


def capped_at_200_steps(env, policy, seed):  # CartPole-v0's limit, a habit from older tutorials
    obs, _ = env.reset(seed=seed)
    total = 0.0
    for _ in range(200):
        obs, reward, terminated, truncated, _ = env.step(policy(obs))
        total += reward
        if terminated or truncated:
            break
    return total


def returns_a_dict(env, policy, seed):
    return {"return": right(env, policy, seed)}


@pytest.mark.parametrize(("wrong", "message"), [
    (forgets_to_return, "returned is None: nothing was returned"),
    (returns_the_rewards, "returned is a list, \\[0.5, 1.5.*Give one plain number"),
    (returns_a_dict, "returned is a dict, \\{'return': .*Give one plain number"),
    (resets_twice, "reset the env 2 times"),
    (capped_at_200_steps, "returned before the episode ended \\(an env whose episodes last 1,000"),
], ids=["forgets-to-return", "returns-the-rewards", "returns-a-dict", "resets-twice",
        "capped-at-200-steps"])
def test_run_episode_rejects_a_non_number_or_a_second_reset(wrong, message):
    with pytest.raises(ExerciseError, match=message):
        check_run_episode(wrong)


def test_the_stub_is_not_attempted_and_the_reference_carries_on(capsys):
    def run_episode(env, policy, seed):
        raise NotImplementedError("TODO: write the loop")

    reference = check_run_episode(run_episode)
    out = capsys.readouterr().out
    assert "Not attempted yet" in out and "show_solution('run_episode')" in out
    assert reference is not run_episode
    check_run_episode(reference)  # the stand-in is itself a right answer
