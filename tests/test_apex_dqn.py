"""Ape-X DQN: per-runner epsilons on the runners, samples into replay shards and batches out of them,
priorities back, requests kept in flight without a blocking ray.get, a killed runner back with its
epsilon, checkpoints with the shards, MeanStdFilter statistics merged from every runner, stop()
ending the shards, bad settings. (Learning CartPole: tests/test_learning.py.)"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import ray
from helpers import SLOW_RESTARTS
from ray.exceptions import GetTimeoutError, RayActorError

from rlcourse.algorithms.algorithm import Algorithm
from rlcourse.algorithms.apex_dqn import ApexDQNConfig
from rlcourse.algorithms.apex_dqn.apex_dqn import per_worker_epsilons
from rlcourse.algorithms.apex_dqn.replay_actor import ReplayActor
from rlcourse.connectors.env_to_module import MeanStdFilter
from rlcourse.env.sample_result import SampleResult
from rlcourse.env.single_agent_episode import SingleAgentEpisode
from rlcourse.utils.validation import ConfigError

pytestmark = pytest.mark.timeout(180)

RB = {"type": "PrioritizedEpisodeReplayBuffer", "capacity": 64, "alpha": 0.6, "beta": 0.4}


def _small_config(num_runners: int = 2, shards: int = 1) -> ApexDQNConfig:
    return (ApexDQNConfig().environment("CartPole-v1").debugging(seed=0)
            .env_runners(num_env_runners=num_runners, num_cpus_per_env_runner=0.5,
                         rollout_fragment_length=16)
            .training(train_batch_size_per_learner=16, num_steps_sampled_before_learning_starts=64,
                      min_sample_timesteps_per_iteration=128, max_weight_sync_delay=32,
                      replay_buffer_config={"num_replay_buffer_shards": shards}))


def _sample(steps: int) -> SampleResult:
    obs = np.arange(steps + 1, dtype=np.float32)[:, None]
    episode = SingleAgentEpisode(obs, np.zeros(steps, np.int64), np.ones(steps, np.float32), None,
                                 True, False)
    metrics = {"num_env_steps_sampled": steps, "episode_returns": [float(steps)],
               "episode_lens": [steps]}
    return SampleResult([episode], metrics, 0, 123)


def test_per_worker_epsilons_follow_ape_x_formula():
    assert per_worker_epsilons(1) == [0.4]
    assert per_worker_epsilons(3) == pytest.approx([0.4, 0.4 ** 4.5, 0.4 ** 8])
    eps = per_worker_epsilons(8)
    assert all(a > b for a, b in zip(eps, eps[1:], strict=False))


def test_each_runner_is_built_with_its_own_epsilon():
    """Ape-X's per-runner epsilon is fixed: the runner's action head gets it when it is built
    (runner i takes entry i - 1; the driver's runner, index 0, the first), never with the weights."""
    config = ApexDQNConfig().env_runners(num_env_runners=3)
    heads = [config.get_action_head(gym.spaces.Discrete(2), i) for i in range(4)]
    assert [h.epsilon for h in heads] == pytest.approx([per_worker_epsilons(3)[0],
                                                        *per_worker_epsilons(3)])


def test_a_shard_stores_samples_serves_batches_and_takes_priorities():
    shard = ReplayActor(RB, seed=0)
    answer = shard.add_sample(_sample(40))
    assert answer["pid"] == 123 and answer["num_env_steps_stored"] == 40
    assert answer["metrics"]["num_env_steps_sampled"] == 40
    batch = shard.sample(8, n_step=3, gamma=0.9)
    assert batch["obs"].shape == (8, 1) and np.all(batch["generations"] == 1)
    row = batch["indices"][0]
    before = shard.buffer.tree.leaves[row]
    shard.update_priorities(batch["indices"][:1], batch["generations"][:1], np.array([5.0]))
    assert shard.buffer.tree.leaves[row] == pytest.approx(5.0 ** 0.6)
    assert shard.buffer.tree.leaves[row] != before
    # The batch's episode is evicted and its slots refilled: a late update must not touch them.
    shard.add_sample(_sample(60))
    leaves = shard.buffer.tree.leaves.copy()
    shard.update_priorities(batch["indices"], batch["generations"], np.full(8, 100.0))
    np.testing.assert_array_equal(shard.buffer.tree.leaves, leaves)
    assert shard.get_stats()["num_stale_priorities_dropped"] == 8


def test_epsilons_reach_runners_and_samples_flow_through_the_shards(ray_session, algo_factory):
    algo = algo_factory(_small_config(2, shards=2))
    results = [algo.train() for _ in range(4)]
    result = results[-1]
    assert result["env_runners"]["epsilons"] == pytest.approx(per_worker_epsilons(2))
    held = algo.env_runner_group.foreach_env_runner(lambda runner: runner.module.head.epsilon)
    assert held == pytest.approx(per_worker_epsilons(2))
    sampled = result["num_env_steps_sampled_lifetime"]
    stored = result["replay_shards"]["num_env_steps_stored"]
    assert all(size > 0 for size in stored) and sum(stored) <= sampled
    stats = ray.get([s.get_stats.remote() for s in algo.replay_shards])
    # Every sample counted went into a shard; a few more may be stored but not yet counted.
    added = sum(s["num_env_steps_added_lifetime"] for s in stats)
    assert sampled <= added <= sampled + len(algo._adds) * 16
    assert sum(r["learners"]["default_policy"]["num_updates"] for r in results) > 0
    assert sum(s["num_priority_updates"] for s in stats) > 0
    qf_loss = result["learners"]["default_policy"]["qf_loss"]
    assert np.isfinite(qf_loss) and qf_loss > 0  # a weighted Huber loss: 0 only if every TD error were 0
    # The shards run NumPy only.
    assert not any(ray.get([s.__ray_call__.remote(lambda _: "torch" in sys.modules)
                            for s in algo.replay_shards]))


def test_the_most_greedy_runner_acts_almost_greedily(ray_session, algo_factory):
    """Runner 2 of 2 explores with epsilon 0.4 ** 8: its actions are the greedy ones; runner 1's
    (epsilon 0.4) differ from the greedy action about 0.4 / 2 of the time."""
    algo = algo_factory(_small_config(2))
    algo.train()

    def disagreement(runner):
        obs = np.random.default_rng(0).normal(size=(4000, 4)).astype(np.float32)
        explored = runner.module.forward_exploration(obs)["actions"]
        return float(np.mean(explored != runner.module.forward_inference(obs)["actions"]))

    first, last = algo.env_runner_group.foreach_env_runner(disagreement)
    assert 0.15 < first < 0.25 and last < 0.005


def test_requests_stay_in_flight_within_limits_and_train_never_waits_in_ray_get(
        ray_session, algo_factory, monkeypatch):
    algo = algo_factory(_small_config(2).training(max_requests_in_flight_per_replay_worker=3))
    real_get = ray.get
    blocking_gets = []

    def get_only_finished(refs, *args, **kwargs):
        many = refs if isinstance(refs, list) else [refs]
        if len(ray.wait(many, num_returns=len(many), timeout=0)[0]) < len(many):
            blocking_gets.append(many)
        return real_get(refs, *args, **kwargs)

    monkeypatch.setattr(ray, "get", get_only_finished)
    results = [algo.train() for _ in range(5)]
    monkeypatch.undo()
    assert blocking_gets == []
    sample_peaks = [r["env_runners"]["num_sample_requests_in_flight_max"] for r in results]
    replay_peaks = [r["replay_shards"]["num_replay_requests_in_flight_max"] for r in results]
    assert max(sample_peaks) == 2 * 2  # 2 runners x 2 requests: always topped up, never more
    assert max(replay_peaks[1:]) == 3 and max(replay_peaks) <= 3


def test_a_replay_request_serves_its_batches_and_takes_back_all_their_priorities(
        ray_session, algo_factory):
    """replay_batches_per_request=3: a request is 3 x 16 rows, an update per 16, and one
    update_priorities call returns a priority for every row trained on."""
    algo = algo_factory(_small_config(1).training(replay_batches_per_request=3))
    updates = []
    for _ in range(4):
        learner = algo.train()["learners"]["default_policy"]
        updates.append(learner["num_updates"])
        assert learner["num_env_steps_trained"] == 16 * learner["num_updates"]
    assert sum(updates) > 0 and all(n % 3 == 0 for n in updates), updates
    ray.get(list(algo._priority_updates))
    stats = ray.get(algo.replay_shards[0].get_stats.remote())
    returned = stats["num_priority_updates"] + stats["num_stale_priorities_dropped"]
    assert returned == algo.num_env_steps_trained_lifetime == 16 * sum(updates)


def test_a_throttled_learner_keeps_the_replay_ratio(ray_session, algo_factory):
    algo = algo_factory(_small_config(2).training(training_intensity=2.0,
                                                  throttle_sampling_to_training_intensity=True))
    for _ in range(6):
        result = algo.train()
    trained = result["num_env_steps_trained_lifetime"]
    sampled = result["num_env_steps_sampled_lifetime"] - 64  # learning starts after 64 steps
    assert 1.0 < trained / sampled <= 2.0 + 1e-9


def test_a_killed_runner_comes_back_with_its_own_epsilon_and_the_weights(ray_session,
                                                                          algo_factory):
    algo = algo_factory(_small_config(2).fault_tolerance(**SLOW_RESTARTS))
    for _ in range(2):
        algo.train()
    group = algo.env_runner_group
    os.kill(ray.get(group.remote_env_runners[1].ping.remote()), signal.SIGKILL)
    deadline = time.monotonic() + 90  # a restart takes seconds on a busy machine, not iterations
    while time.monotonic() < deadline:
        result = algo.train()
        if result["env_runners"]["num_env_runner_restarts"] and group.num_healthy_env_runners == 2:
            break
    for _ in range(2):
        result = algo.train()
    assert result["env_runners"]["num_env_runner_restarts"] == 1
    assert result["learners"]["default_policy"]["num_updates"] > 0
    held = group.foreach_env_runner(lambda runner: (runner.module.head.epsilon, runner.weights_seq_no))
    assert [eps for eps, _ in held] == pytest.approx(per_worker_epsilons(2))
    assert all(version == group.weights_seq_no for _, version in held)


def test_checkpoint_with_shards_and_stop_ends_every_actor(ray_session, algo_factory, tmp_path):
    algo = algo_factory(_small_config(2, shards=2).training(store_buffer_in_checkpoints=True))
    for _ in range(3):
        result = algo.train()
    path = algo.save_to_path(tmp_path / "ckpt")
    sizes = [s["num_env_steps_stored"] for s in ray.get([s.get_stats.remote()
                                                         for s in algo.replay_shards])]
    state = json.loads(next(Path(path).glob("v-*/state.json")).read_text())
    assert len(state["apex_dqn"]["replay_shards"]) == 2
    restored = Algorithm.from_checkpoint(path)
    try:
        assert type(restored).__name__ == "ApexDQN"
        assert restored.num_env_steps_trained_lifetime == result["num_env_steps_trained_lifetime"]
        restored_sizes = [s["num_env_steps_stored"] for s in ray.get(
            [s.get_stats.remote() for s in restored.replay_shards])]
        assert restored_sizes == sizes
        restored.train()
    finally:
        restored.stop()
    actors = [*algo.replay_shards, *algo.env_runner_group.remote_env_runners]
    algo.stop()
    assert algo.replay_shards == [] and all(_dies_soon(actor) for actor in actors)


def test_runners_filter_with_statistics_merged_from_every_runner(ray_session, algo_factory):
    """Samples reach the shards by reference; the shards hand back each sample's new MeanStdFilter
    statistics, which the group merges and sends out with the weights."""
    algo = algo_factory(_small_config(2).env_runners(
        env_to_module_connector=lambda env: MeanStdFilter()))
    for _ in range(3):
        result = algo.train()
    group = algo.env_runner_group
    merged = group.env_to_module_state[0]["running_stats"]
    assert merged["n"] >= result["num_env_steps_sampled_lifetime"]  # both runners' observations
    algo.sync_env_runner_weights()
    held = group.foreach_env_runner(lambda r: r.env_to_module.connectors[0].running_stats.n)
    assert all(n >= merged["n"] for n in held)  # each holds the other runner's data as well


def _dies_soon(actor, timeout_s: float = 30) -> bool:
    """Whether the actor stops answering within `timeout_s` (ray.kill takes effect asynchronously)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            ray.get(actor.ping.remote(), timeout=5)
        except RayActorError:
            return True
        except GetTimeoutError:  # alive but slow to answer on a busy machine: ask again
            continue
        time.sleep(0.2)
    return False


@pytest.mark.parametrize(("settings", "setting"), [
    ({"num_env_runners": 0}, "num_env_runners"),
    ({"replay_buffer_config": {"num_replay_buffer_shards": 0}}, "replay_buffer_config"),
    ({"replay_buffer_config": {"capacity": 16}}, "replay_buffer_config"),
    ({"replay_buffer_config": {"capacity": 16.5}}, "replay_buffer_config"),
    ({"max_requests_in_flight_per_replay_worker": 0}, "max_requests_in_flight_per_replay_worker"),
    ({"replay_batches_per_request": 0}, "replay_batches_per_request"),
    ({"training_intensity": None, "throttle_sampling_to_training_intensity": True},
     "throttle_sampling_to_training_intensity"),
    ({"n_step": 0}, "n_step"),
])
def test_bad_settings_fail_at_build_time_naming_the_setting(settings, setting):
    config = ApexDQNConfig().environment("CartPole-v1").training(train_batch_size_per_learner=32)
    config.__dict__.update({k: ({**config.replay_buffer_config, **v}
                                if k == "replay_buffer_config" else v)
                            for k, v in settings.items()})
    with pytest.raises(ConfigError) as error:
        config.validate()
    assert error.value.setting == setting


def test_apex_config_imports_no_torch():
    code = textwrap.dedent("""
        import sys
        from rlcourse.algorithms.apex_dqn import ApexDQNConfig
        ApexDQNConfig().environment("CartPole-v1").validate()
        print("torch" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False"]
