"""Server-side inference (server_side_inference.py): a client sends observations and gets actions,
and the runner assembles exactly the episodes a client-side client would send, which PPO trains on;
both kinds of client share one runner; an episode in progress when a client leaves never arrives.
(Bad GET_ACTION and END_EPISODE messages: tests/test_external_bad_input.py.)"""

import json
import time

import gymnasium as gym
import numpy as np
import pytest
from external_helpers import (
    external_config,
    handshake,
    made_up_weights,
    raw_connect,
    receive_raw,
    run_client_in_thread,
    send_raw,
    start_runner,
)

from rlcourse.env.external.client import decode_array, encode_array
from rlcourse.env.external.env_runner_server_for_external_inference import (
    EnvRunnerServerForExternalInference,
)

pytestmark = pytest.mark.timeout(60)


def runner_for(config) -> EnvRunnerServerForExternalInference:
    runner = EnvRunnerServerForExternalInference(config)
    runner.set_weights(made_up_weights())
    return runner


def request(sock, kind: str, obs, **fields) -> dict | None:
    """Send a GET_ACTION or END_EPISODE; GET_ACTION's answer (or an ERROR)."""
    send_raw(sock, json.dumps({"type": kind, "obs": encode_array(np.asarray(obs, np.float32)),
                               **fields}).encode())
    return receive_raw(sock) if kind == "GET_ACTION" else None


def test_a_server_side_episode_is_the_client_side_episode():
    """Greedy, from the same env seed and weights: the same episode, field by field."""
    runner = runner_for(external_config(client_timeout_s=2.0).env_runners(explore=False))
    episodes = {}
    try:
        for mode in ("client", "server"):
            thread = run_client_in_thread(runner, max_env_steps=1, steps_per_batch=1, inference=mode)
            [episodes[mode]] = runner.sample(num_episodes=1)
            thread.join(timeout=10)
    finally:
        runner.stop()
    ours, theirs = episodes["server"], episodes["client"]
    assert len(ours) == len(theirs) > 1
    for field in ("observations", "actions", "rewards"):
        assert getattr(ours, field).dtype == getattr(theirs, field).dtype
        np.testing.assert_array_equal(getattr(ours, field), getattr(theirs, field))
    assert ours.extra_model_outputs.keys() == theirs.extra_model_outputs.keys() == {"action_logp"}
    assert ours.extra_model_outputs["action_logp"].dtype == np.float32
    np.testing.assert_allclose(ours.extra_model_outputs["action_logp"],
                               theirs.extra_model_outputs["action_logp"], atol=1e-6)
    assert (ours.is_terminated, ours.is_truncated) == (theirs.is_terminated, theirs.is_truncated)


def test_one_client_of_each_kind_on_one_runner():
    runner = start_runner(client_timeout_s=1.0)
    sent = {"client": [], "server": []}
    try:
        threads = [run_client_in_thread(runner, max_env_steps=150, steps_per_batch=50, seed=i,
                                        inference=mode, sent=sent[mode])
                   for i, mode in enumerate(sent)]
        episodes = runner.sample(num_timesteps=300)
        for thread in threads:
            thread.join(timeout=10)
        assert sent["client"][0] >= 150 and sent["server"][0] >= 150
        # Every step both sent arrived, in whole episodes of one shape.
        assert sum(map(len, episodes)) + runner._queued_steps == sum(s[0] for s in sent.values())
    finally:
        runner.stop()
    for episode in episodes:
        t = len(episode)
        assert episode.is_done and episode.observations.shape == (t + 1, 4)
        assert episode.actions.dtype == np.int64 and set(np.unique(episode.actions)) <= {0, 1}
        logp = episode.extra_model_outputs["action_logp"]
        assert logp.dtype == np.float32 and logp.shape == (t,) and (logp <= 0).all()


@pytest.mark.parametrize("space", [gym.spaces.Discrete(2, start=3),
                                   gym.spaces.Box(-0.1, 0.1, (1,), np.float32)])
def test_the_runner_records_what_was_sent_and_answered(space):
    runner = runner_for(external_config(max_episode_steps=3, client_timeout_s=1.0)
                        .environment(action_space=space))
    observations = np.arange(16, dtype=np.float32).reshape(4, 4) / 10
    try:
        sock = raw_connect(runner)
        handshake(sock)
        answers = [request(sock, "GET_ACTION", obs, **({"reward": float(t)} if t else {}))
                   for t, obs in enumerate(observations[:3])]
        request(sock, "END_EPISODE", observations[3], reward=3.0, terminated=False, truncated=True)
        [episode] = runner.sample(num_episodes=1)
        handshake(sock)  # still served (the next episode waits 0.5 s for new weights); a fourth
        # step is one too many
        for t, obs in enumerate(observations):
            answer = request(sock, "GET_ACTION", obs, **({"reward": 1.0} if t else {}))
        assert answer["type"] == "ERROR" and "max_episode_steps" in answer["message"]
    finally:
        runner.stop()
    np.testing.assert_array_equal(episode.observations, observations)
    np.testing.assert_array_equal(episode.rewards, [1.0, 2.0, 3.0])
    assert episode.is_truncated and not episode.is_terminated
    actions = [answer["action"] for answer in answers]
    if isinstance(space, gym.spaces.Discrete):  # the env's actions; the module's are recorded
        assert set(actions) <= {3, 4} and list(episode.actions + 3) == actions
    else:
        sent = [decode_array(action) for action in actions]
        assert all(-0.1 <= a[0] <= 0.1 for a in sent)  # clipped into the space; recorded unclipped
        assert episode.actions.dtype == np.float32 and episode.actions.shape == (3, 1)
        np.testing.assert_allclose(np.clip(episode.actions, -0.1, 0.1), sent)
    assert episode.extra_model_outputs["action_logp"].shape == (3,)


def test_a_client_that_leaves_mid_episode_leaves_nothing_and_others_are_served():
    runner = start_runner(client_timeout_s=1.0)
    try:
        sock = raw_connect(runner)
        handshake(sock)
        for t in range(3):
            assert request(sock, "GET_ACTION", np.zeros(4), **({"reward": 1.0} if t else {})
                           )["type"] == "ACTION"
        sock.close()  # as a simulator process killed mid-episode
        deadline = time.monotonic() + 5
        while runner.num_clients and time.monotonic() < deadline:
            time.sleep(0.02)
        assert runner.num_clients == 0 and runner._queued_steps == 0
        assert runner.counts["num_external_episodes_received"] == 0
        thread = run_client_in_thread(runner, max_env_steps=100, inference="server")
        assert all(e.is_done for e in runner.sample(num_timesteps=100))
        thread.join(timeout=10)
    finally:
        runner.stop()


def test_ppo_trains_on_server_side_episodes(algo_factory):
    config = external_config().training(train_batch_size_per_learner=200, minibatch_size=100,
                                        num_epochs=1)
    algo = algo_factory(config)  # no runner actors: the server runner is in this process
    runner = algo.env_runner_group.local_env_runner
    run_client_in_thread(runner, max_env_steps=None, inference="server")
    results = [algo.train() for _ in range(2)]
    assert results[-1]["num_env_steps_sampled_lifetime"] >= 400
    assert np.isfinite(results[-1]["learners"]["default_policy"]["total_loss"])
    assert runner.counts["num_external_messages_refused"] == 0
