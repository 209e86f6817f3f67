"""The simulator_loop checker (lesson 14) accepts right answers and names the typical mistakes:
each wrong loop below is one a learner might write."""

import importlib.util

import pytest

from rlcourse.course.exercises import ExerciseError, check_simulator_loop, reference_simulate
from rlcourse.course.exercises.common import SOLUTIONS
from rlcourse.env.external import client
from rlcourse.env.external.client import episode_entry

pytestmark = pytest.mark.timeout(60)


def play(env, policy, cut_at=None):
    """One episode as lists (obs, actions, rewards, logps, terminated); cut after `cut_at` steps."""
    obs, _ = env.reset()
    observations, actions, rewards, logps = [obs], [], [], []
    terminated = truncated = False
    while not (terminated or truncated) and len(rewards) != cut_at:
        action, logp = policy.act(obs)
        obs, reward, terminated, truncated, _ = env.step(action)
        observations.append(obs)
        actions.append(action)
        rewards.append(reward)
        logps.append(logp)
    return observations, actions, rewards, logps, terminated


def loop(episode=play, refresh=True, final="send", keep_batch=False, each_step=False,
         drop_last=False, send_at_end_only=False, count=lambda sent: sent, inclusive=False,
         at_most=False):
    """A batching loop with one mistake switched on."""
    def simulate(connection, policy, env, steps_per_batch, max_env_steps):
        sent, batch, steps = 0, [], 0
        while sent < max_env_steps + at_most:  # at_most: `<=` where `<` belongs
            if not keep_batch:
                batch, steps = [], 0
            goal = 1 if each_step else steps_per_batch
            start = steps
            while (steps - (start if keep_batch else 0) < goal + inclusive) and sent + steps - (
                    start if keep_batch else 0) < max_env_steps:
                parts = episode(env, policy)
                batch.append(episode_entry(*parts))
                steps += len(parts[2])
            sent += steps - (start if keep_batch else 0)
            if sent >= max_env_steps:
                if not drop_last:
                    message = {"type": "EPISODES", "episodes": batch}
                    if final == "send":
                        connection.send(message)
                    else:
                        connection.request({**message, "type": final}, "SET_STATE")
            elif not send_at_end_only:
                state = connection.request({"type": "EPISODES_AND_GET_STATE", "episodes": batch},
                                           "SET_STATE")
                if refresh:
                    policy.set_state(state)
        return count(sent)
    return simulate


def partial_episodes(connection, policy, env, steps_per_batch, max_env_steps):
    """Fills each batch with exactly steps_per_batch env steps, cutting the episode in progress
    there and going on with it in the next batch."""
    sent, obs, parts = 0, None, None
    while sent < max_env_steps:
        batch, steps = [], 0
        while steps < min(steps_per_batch, max_env_steps - sent):
            if obs is None:
                obs, _ = env.reset()
                parts = [[obs], [], [], []]
            action, logp = policy.act(obs)
            obs, reward, terminated, truncated, _ = env.step(action)
            for values, value in zip(parts, (obs, action, reward, logp), strict=True):
                values.append(value)
            steps += 1
            if terminated or truncated:
                batch.append(episode_entry(*parts, terminated))
                obs = None
        if obs is not None:  # the episode in progress, so far
            batch.append(episode_entry(*parts, False))
            parts = [[obs], [], [], []]
        sent += steps
        if sent >= max_env_steps:
            connection.send({"type": "EPISODES", "episodes": batch})
        else:
            policy.set_state(connection.request({"type": "EPISODES_AND_GET_STATE",
                                                 "episodes": batch}, "SET_STATE"))
    return sent


def one_message_at_the_end(connection, policy, env, steps_per_batch, max_env_steps):
    batch, sent = [], 0
    while sent < max_env_steps:
        batch.append(episode_entry(*play(env, policy)))
        sent += len(client.decode_array(batch[-1]["rewards"]))
    connection.send({"type": "EPISODES", "episodes": batch})
    return sent


def without_the_reset_observation(env, policy):
    observations, *rest = play(env, policy)
    return (observations[1:] + [observations[-1]], *rest)  # shifted: the first obs is a step's


def drops_the_last_step(env, policy):
    observations, actions, rewards, logps, terminated = play(env, policy)
    return observations[:-1], actions[:-1], rewards[:-1], logps[:-1], terminated


def stale_first_observation():
    """Begins each episode with the previous episode's last observation (reset()'s not kept)."""
    last = {}

    def episode(env, policy):
        observations, *rest = play(env, policy)
        first = last.get("obs", observations[0])
        last["obs"] = observations[-1]
        return ([first, *observations[1:]], *rest)
    return episode


def changed(change):
    """play(), then `change(actions, logps)` -> the (actions, logps) sent."""
    def episode(env, policy):
        observations, actions, rewards, logps, terminated = play(env, policy)
        return observations, *change(actions, rewards, logps), terminated
    return episode


def redraws(env, policy):
    """Plays an episode, then asks the policy again for each step's action to send."""
    observations, _, rewards, _, terminated = play(env, policy)
    redrawn = [policy.act(obs) for obs in observations[:-1]]
    return observations, [a for a, _ in redrawn], rewards, [p for _, p in redrawn], terminated


def steps_with_what_act_returns(env, policy):
    obs, _ = env.reset()
    env.step(policy.act(obs))  # (action, logp): not unpacked
    return play(env, policy)


def forever(connection, policy, env, steps_per_batch, max_env_steps):
    """Never counts what it sends: plays episodes until something stops it."""
    while True:
        connection.send({"type": "EPISODES", "episodes": [episode_entry(*play(env, policy))]})


def steps_after_done(connection, policy, env, steps_per_batch, max_env_steps):
    """Resets only once, then steps on past the end of the first episode."""
    obs, _ = env.reset()
    for _ in range(max_env_steps):
        obs, *_ = env.step(policy.act(obs)[0])
    return max_env_steps


WRONG = [
    (partial_episodes, "whole episodes only"),
    (loop(refresh=False), "policy.set_state"),
    (loop(drop_last=True), "never sent"),
    (loop(each_step=True), "at least steps_per_batch"),
    (loop(episode=without_the_reset_observation), "begin each with the observation env.reset()"),
    (loop(episode=drops_the_last_step), "whole episodes only"),
    (loop(episode=stale_first_observation()), "one episode holds the steps of two"),
    (loop(final="EPISODES_AND_GET_STATE"), "connection.send"),
    (loop(keep_batch=True), "sent an episode again"),
    (loop(send_at_end_only=True), "never sent"),
    (one_message_at_the_end, "as soon as it holds steps_per_batch"),
    (loop(count=lambda sent: sent - 1), "return that"),
    (loop(inclusive=True), "more than it needed"),  # `<=` where `<` belongs: one episode too many
    (steps_after_done, "env.reset()"),
    (loop(episode=changed(lambda a, r, p: (p, r, a))), "actions are not the ones env.step()"),
    (loop(episode=changed(lambda a, r, p: (a[1:] + a[:1], r, p))),
     "actions are not the ones env.step()"),
    (loop(episode=changed(lambda a, r, p: (a, r, [2.718281828 ** x for x in p]))),
     "action_logp are not the log-probabilities"),
    (loop(episode=changed(lambda a, r, p: (a, r, [0.0] * len(p)))),
     "action_logp are not the log-probabilities"),
    (loop(episode=redraws), "actions are not the ones env.step()"),
    (loop(episode=steps_with_what_act_returns), "returns two values: action, logp"),
    (loop(at_most=True), "holds no episode.*not <="),
    (forever, "began 2000 episodes"),
]


def test_the_reference_and_the_solution_are_correct(capsys):
    assert check_simulator_loop(reference_simulate) is reference_simulate
    spec = importlib.util.spec_from_file_location("solution", SOLUTIONS / "simulator_loop.py")
    solution = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(solution)
    check_simulator_loop(solution.simulate)
    assert capsys.readouterr().out.count("Correct") == 2


@pytest.mark.parametrize(("wrong", "hint"), WRONG, ids=[
    "partial episodes", "never refreshes weights", "drops the last batch", "each step a message",
    "no reset observation", "drops the last step", "stale first observation",
    "last batch as a request",
    "batch never cleared", "skips the requests", "one message at the end", "wrong count",
    "steps a finished episode", "<= fills a batch past steps_per_batch", "actions and logps swapped",
    "actions rotated", "probabilities not log", "zero logps", "sends a second draw",
    "steps with the pair", "<= in the outer loop", "never stops"])
def test_a_wrong_loop_is_rejected_with_its_hint(wrong, hint):
    with pytest.raises(ExerciseError, match=hint.replace("(", r"\(").replace(")", r"\)")):
        check_simulator_loop(wrong)


def test_the_untouched_stub_is_not_attempted(capsys):
    def simulate(connection, policy, env, steps_per_batch, max_env_steps):
        raise NotImplementedError("TODO")

    assert check_simulator_loop(simulate) is reference_simulate
    assert "Not attempted yet" in capsys.readouterr().out
