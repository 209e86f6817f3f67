"""Env-to-module connectors: MeanStdFilter's maths, its statistics merged across runners at each
weight sync, saved in checkpoints and frozen in evaluation; FlattenObservations; reward clipping;
bad settings refused with a ConfigError that names them."""

import re

import gymnasium as gym
import numpy as np
import pytest
from helpers import small_ppo

import rlcourse.course.multi_agent_envs  # noqa: F401  (registers ConnectFour)
from rlcourse.algorithms.algorithm import Algorithm
from rlcourse.callbacks.callbacks import Callbacks
from rlcourse.connectors.clip_rewards import clip_rewards
from rlcourse.connectors.connector_v2 import ConnectorV2
from rlcourse.connectors.env_to_module import FlattenObservations, MeanStdFilter
from rlcourse.connectors.env_to_module.mean_std_filter import RunningStat
from rlcourse.env.single_agent_env_runner import SingleAgentEnvRunner
from rlcourse.utils.serialization import from_plain
from rlcourse.utils.validation import ConfigError

pytestmark = pytest.mark.timeout(180)


class CounterEnv(gym.Env):
    """Observation [t, 10 t] at step t of 5, whatever the action; reward `reward` per step."""

    observation_space = gym.spaces.Box(-100.0, 100.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config: dict | None = None):
        self.reward = (config or {}).get("reward", 1.0)

    def _obs(self) -> np.ndarray:
        return np.array([self.t, 10 * self.t], np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        return self._obs(), self.reward, self.t == 5, False, {}


class DictEnv(CounterEnv):
    """CounterEnv's step count as a Dict: {"mode": Discrete(3) (t mod 3), "pos": Box(2)}."""

    observation_space = gym.spaces.Dict({"mode": gym.spaces.Discrete(3),
                                         "pos": gym.spaces.Box(-100.0, 100.0, (2,), np.float32)})

    def _obs(self) -> dict:
        return {"mode": self.t % 3, "pos": np.array([self.t, 10 * self.t], np.float32)}


def mean_std_filter(env, spaces=None, device=None):
    """A module-level factory (checkpoints name it; a lambda cannot be saved)."""
    return MeanStdFilter()


def filtered_ppo(env="CartPole-v1", **env_runners):
    return (small_ppo().environment(env)
            .env_runners(env_to_module_connector=mean_std_filter, **env_runners)
            .training(train_batch_size_per_learner=200, minibatch_size=100, num_epochs=1)
            .debugging(seed=0))


def stats_of(runner: SingleAgentEnvRunner) -> tuple[int, np.ndarray, np.ndarray]:
    stat = runner.env_to_module.connectors[0].running_stats
    return stat.n, stat.mean, stat.std


def merged(group) -> RunningStat:
    return RunningStat.from_plain(group.env_to_module_state[0]["running_stats"])


# -- the maths ----------------------------------------------------------------------------------

def test_merging_two_runners_statistics_equals_statistics_over_the_union():
    rng = np.random.default_rng(0)
    a, b = rng.normal(3.0, 2.0, (500, 3)), rng.normal(-1.0, 0.5, (70, 3))
    filters = [MeanStdFilter(), MeanStdFilter()]
    for f, data in zip(filters, (a, b), strict=True):
        f.recompute_output_observation_space(gym.spaces.Box(-np.inf, np.inf, (3,)), None)
        for chunk in np.array_split(data, 7):  # in batches, as a runner sees them
            f(chunk)
    union = np.concatenate([a, b])
    state = MeanStdFilter.merge_states(None, [f.pop_buffer() for f in filters])
    stat = RunningStat.from_plain(state["running_stats"])
    assert stat.n == 570
    np.testing.assert_allclose(stat.mean, union.mean(axis=0), rtol=1e-10)
    np.testing.assert_allclose(stat.std, union.std(axis=0, ddof=1), rtol=1e-10)
    # Popped buffers are empty: merging again adds nothing, and base + new data is the union too.
    assert MeanStdFilter.merge_states(state, [f.pop_buffer() for f in filters]) == state
    filters[0](union[:10])
    again = RunningStat.from_plain(MeanStdFilter.merge_states(state, [filters[0].pop_buffer()])[
        "running_stats"])
    np.testing.assert_allclose(again.mean, np.concatenate([union, union[:10]]).mean(axis=0))


def test_the_filter_normalizes_clips_and_takes_merged_statistics_plus_its_own_new_ones():
    f = MeanStdFilter(clip_by_value=1.0)
    space = f.recompute_output_observation_space(gym.spaces.Box(-9.0, 9.0, (2,)), None)
    assert space == gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    data = np.array([[0.0, 10.0], [2.0, 10.0], [4.0, 10.0], [100.0, 10.0]])
    out = f(data)
    stat = f.running_stats
    expected = np.clip((data - data.mean(axis=0)) / (data.std(axis=0, ddof=1) + 1e-8), -1.0, 1.0)
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    assert out[3, 0] == 1.0 and np.all(out[:, 1] == 0.0)
    f(data, update=False)
    assert stat.n == 4
    other = MeanStdFilter()
    other.recompute_output_observation_space(gym.spaces.Box(-9.0, 9.0, (2,)), None)
    other(-data)
    f.set_state(other.get_state() | {"buffer": f.buffer.to_plain()})  # a saved state: as it is
    np.testing.assert_allclose(f.running_stats.mean, -data.mean(axis=0))
    # Merged statistics from elsewhere (no "buffer") plus what this filter saw since it last
    # reported (its buffer) become the running statistics.
    f.set_state({"running_stats": other.running_stats.to_plain()})
    assert f.running_stats.n == 8
    np.testing.assert_allclose(f.running_stats.mean, 0.0)


# -- runners ------------------------------------------------------------------------------------

def test_episodes_hold_what_the_module_saw_final_observations_included():
    config = (small_ppo().environment(CounterEnv)
              .env_runners(num_envs_per_env_runner=2, env_to_module_connector=mean_std_filter))
    runner = SingleAgentEnvRunner(config)
    episodes = runner.sample(num_timesteps=20)
    # Per sub-env: a reset (t=0), then 10 steps; steps 5 and 10 end an episode, whose last
    # observation (t=5) is processed beside the next episode's first (t=0).
    ts = [0] + [x for k in range(1, 11) for x in ([0, 5] if k % 5 == 0 else [k % 5])]
    raw = np.array([[t, 10 * t] for t in ts * 2], np.float64)
    n, mean, std = stats_of(runner)
    assert n == len(raw) == 26
    np.testing.assert_allclose(mean, raw.mean(axis=0), rtol=1e-6)
    # With these statistics frozen, every recorded observation is (raw - mean) / std.
    runner.env_to_module.update_stats = False
    assert all(e.observations.dtype == np.float32 for e in episodes)
    for episode in runner.sample(num_episodes=3):
        t = np.arange(episode.t_started, episode.t + 1)
        expected = (np.stack([t, 10 * t], axis=1) - mean) / (std + 1e-8)
        np.testing.assert_allclose(episode.observations, expected, rtol=1e-5, atol=1e-6)
    assert stats_of(runner)[0] == 26


def test_remote_runners_hold_the_same_merged_statistics_after_an_iteration(ray_session,
                                                                         algo_factory):
    # A lambda travels to the runner actors by value (they cannot import this test module).
    algo = algo_factory(filtered_ppo(num_env_runners=2, num_cpus_per_env_runner=0.5).env_runners(
        env_to_module_connector=lambda env: MeanStdFilter()))
    group = algo.env_runner_group
    for _ in range(2):
        result = algo.train()
        stats = group.foreach_env_runner(lambda r: r.env_to_module.connectors[0].running_stats)
        total = merged(group)
        assert total.n >= result["env_runners"]["num_env_steps_sampled"]  # both runners' data
        for stat in stats:
            assert stat.n == total.n
            np.testing.assert_allclose(stat.mean, total.mean)
            np.testing.assert_allclose(stat.std, total.std)


def test_checkpoints_keep_the_statistics_and_evaluation_leaves_them_unchanged(ray_session,
                                                                            algo_factory,
                                                                            tmp_path):
    config = filtered_ppo().evaluation(evaluation_interval=1, evaluation_duration=3)
    algo = algo_factory(config)
    algo.train()  # with an evaluation: it must not change the statistics
    group, eval_runner = algo.env_runner_group, algo.eval_env_runner_group.local_env_runner
    before = merged(group)
    assert stats_of(group.local_env_runner)[0] == before.n
    algo.evaluate()
    assert merged(group).n == before.n and stats_of(group.local_env_runner)[0] == before.n
    assert stats_of(eval_runner)[0] == before.n  # frozen at the training statistics
    np.testing.assert_allclose(stats_of(eval_runner)[1], before.mean)
    path = algo.save_to_path(tmp_path / "ckpt")
    restored = Algorithm.from_checkpoint(path, allowed=[mean_std_filter])
    try:
        assert merged(restored.env_runner_group).n == before.n
        assert stats_of(restored.env_runner_group.local_env_runner)[0] == before.n
        restored.train()  # continues: the statistics grow from the saved ones
        assert merged(restored.env_runner_group).n >= before.n + 200
    finally:
        restored.stop()


# -- FlattenObservations ------------------------------------------------------------------------

def test_flatten_observations_one_hots_and_concatenates_in_the_spaces_order():
    space = gym.spaces.Tuple((gym.spaces.Discrete(3, start=1), gym.spaces.MultiDiscrete([2, 3]),
                              gym.spaces.Dict({"b": gym.spaces.Box(0, 1, (2, 2)),
                                               "a": gym.spaces.Box(0, 1, ())})))
    f = FlattenObservations()
    assert f.recompute_output_observation_space(space, None).shape == (3 + 5 + 1 + 4,)
    batch = (np.array([3, 1]), np.array([[1, 2], [0, 0]]),
             {"a": np.array([0.5, 0.25]), "b": np.arange(8.0).reshape(2, 2, 2)})
    out = f(batch)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out[0], [0, 0, 1, 0, 1, 0, 0, 1, 0.5, 0, 1, 2, 3])
    np.testing.assert_array_equal(out[1], [1, 0, 0, 1, 0, 1, 0, 0, 0.25, 4, 5, 6, 7])


def test_flatten_observations_one_hots_a_discrete_space_minus_its_start():
    f = FlattenObservations()
    space = f.recompute_output_observation_space(gym.spaces.Discrete(4, start=-1), None)
    assert space == gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)
    np.testing.assert_array_equal(f(np.array([-1, 2, 0])), np.eye(4, dtype=np.float32)[[0, 3, 1]])


@pytest.mark.parametrize(("space", "batch", "bad"), [
    (gym.spaces.Discrete(4), [0, 7], "7"),  # (was numpy's IndexError)
    (gym.spaces.Discrete(4), [-1], "-1"),  # (was the one-hot of 3)
    (gym.spaces.Discrete(4, start=1), [1, 0], "0"),  # (was the one-hot of 4)
    (gym.spaces.Dict({"a": gym.spaces.MultiDiscrete([3, 4])}), {"a": [[0, 0], [0, 4]]}, r"\[0, 4\]")])
def test_flatten_observations_refuses_values_outside_the_space_naming_value_and_space(space, batch,
                                                                                      bad):
    f = FlattenObservations()
    f.recompute_output_observation_space(space, None)
    batch = {k: np.array(v) for k, v in batch.items()} if isinstance(batch, dict) else np.array(batch)
    sub = space["a"] if isinstance(space, gym.spaces.Dict) else space
    with pytest.raises(ValueError, match=rf"observation {bad}, outside the env's observation_space "
                                         rf"{re.escape(str(sub))}: make the env return values in"):
        f(batch)


def test_a_dict_observation_env_trains_with_flatten_observations(algo_factory):
    config = (small_ppo().environment(DictEnv)
              .env_runners(env_to_module_connector=lambda env: [FlattenObservations(),
                                                                MeanStdFilter()])
              .training(train_batch_size_per_learner=50, minibatch_size=25, num_epochs=1))
    algo = algo_factory(config)
    assert algo.observation_space.shape == (5,)
    weights = algo.learner_group.get_weights()
    result = algo.train()
    assert result["env_runners"]["episode_return_mean"] == 5.0
    changed = algo.learner_group.get_weights()
    assert any(not np.array_equal(weights[k], changed[k]) for k in weights)
    episode = algo.env_runner_group.local_env_runner.sample(num_episodes=1)[0]
    assert episode.observations.shape == (6, 5)


# -- reward clipping ----------------------------------------------------------------------------

@pytest.mark.parametrize("setting, expected", [
    (None, [-3.0, 0.0, 0.5, 7.0]), (True, [-1.0, 0.0, 1.0, 1.0]), (1.0, [-1.0, 0.0, 0.5, 1.0]),
    ((-0.5, 2.0), [-0.5, 0.0, 0.5, 2.0])])
def test_clip_rewards(setting, expected):
    rewards = np.array([-3.0, 0.0, 0.5, 7.0], np.float32)
    np.testing.assert_array_equal(clip_rewards(rewards, setting), expected)


def test_episodes_hold_clipped_rewards_and_returns_stay_the_envs():
    config = (small_ppo().environment(CounterEnv, env_config={"reward": 3.0}, clip_rewards=1.0))
    runner = SingleAgentEnvRunner(config)
    episodes = runner.sample(num_episodes=2)
    assert all(np.all(e.rewards == 1.0) for e in episodes)
    returns = runner.get_metrics()["episode_returns"]
    assert len(returns) >= 2 and set(returns) == {15.0}


# -- bad input ----------------------------------------------------------------------------------

@pytest.mark.parametrize("configure, setting", [
    (lambda c: c.env_runners(env_to_module_connector=42), "env_to_module_connector"),
    (lambda c: c.env_runners(env_to_module_connectors=mean_std_filter), "env_to_module_connectors"),
    (lambda c: c.environment(clip_rewards="yes"), "clip_rewards"),
    (lambda c: c.environment(clip_rewards=-1.0), "clip_rewards"),
    (lambda c: c.environment(clip_rewards=(2.0, 1.0)), "clip_rewards"),
])
def test_bad_settings_are_refused_at_validate(configure, setting):
    with pytest.raises(ConfigError, match=setting) as info:
        configure(small_ppo().environment("CartPole-v1")).validate()
    assert info.value.setting == setting


class Widen(ConnectorV2):  # changes the shape without saying so
    def __call__(self, observations, *, update=True):
        return np.concatenate([observations, observations], axis=1)


class NoCall(ConnectorV2):
    pass


class RLlibCall(ConnectorV2):
    def __call__(self, *, rl_module, batch, episodes, **kwargs):
        return batch


@pytest.mark.parametrize("factory, setting, words", [
    (lambda env: 42, "env_to_module_connector", "not a connector"),
    (lambda env: [MeanStdFilter(), "x"], "env_to_module_connector", "not a connector"),
    (MeanStdFilter(), "env_to_module_connector", r"not the connector: lambda env: MeanStdFilter\(\)"),
    (lambda env: MeanStdFilter, "env_to_module_connector", "the class, not an instance"),
    (lambda env: lambda obs: obs[:, :1], "env_to_module_connector",
     r"function <lambda> returned shape \(1, 1\).*shape \(1, 4\).*ConnectorV2 with recompute"),
    (lambda env: lambda obs: None, "env_to_module_connector", "returned 'NoneType'"),
    (lambda env: Widen(), "env_to_module_connector", "Widen returned shape \\(1, 8\\).*override "
     "recompute_output_observation_space"),
    (lambda env: NoCall(), "env_to_module_connector", r"NoCall .*no __call__.*update=True"),
    (lambda env: RLlibCall(), "env_to_module_connector", r"RLlibCall .*not RLlib's __call__"),
    (lambda env: MeanStdFilter(clip_by_value=0), "clip_by_value", "positive"),
])
def test_bad_connectors_are_refused_at_build(factory, setting, words):
    config = small_ppo().environment("CartPole-v1").env_runners(env_to_module_connector=factory)
    with pytest.raises(ConfigError, match=words) as info:
        config.build_algo()
    assert info.value.setting == setting


def test_mean_std_filter_on_a_dict_space_asks_for_flatten_observations():
    config = small_ppo().environment(DictEnv).env_runners(
        env_to_module_connector=lambda env: MeanStdFilter())
    with pytest.raises(ConfigError, match="FlattenObservations"):
        config.build_algo()


class EpisodeEndCallbacks(Callbacks):
    def on_episode_end(self, *, episode, **kwargs):
        pass


class SampleEndCallbacks(Callbacks):
    def on_sample_end(self, *, samples, **kwargs):
        pass


def test_a_multi_agent_config_refuses_what_its_runner_lacks_by_name():
    """Connectors, reward clipping, sub-env restarts and episode hooks are single-agent only."""
    config = small_ppo().environment("ConnectFour").multi_agent(
        policies={"main"}, policy_mapping_fn=lambda agent_id, episode, **kw: "main")
    for setting, configured in [
            ("env_to_module_connector", config.copy().env_runners(
                env_to_module_connector=mean_std_filter)),
            ("clip_rewards", config.copy().environment(clip_rewards=True)),
            ("restart_failed_sub_environments", config.copy().fault_tolerance(
                restart_failed_sub_environments=True)),
            ("callbacks_class", config.copy().callbacks(EpisodeEndCallbacks))]:
        with pytest.raises(ConfigError, match=f"{setting}.*MultiAgentEnvRunner (has|calls) no"):
            configured.validate()
    with pytest.raises(ConfigError, match="give the agents Box ones .* or pass rl_module_class"):
        config.copy().env_runners(env_to_module_connector=mean_std_filter).validate()
    config.copy().callbacks(SampleEndCallbacks).validate()  # on_sample_end runs on its runners


def test_checkpoint_state_is_plain_data():
    runner = SingleAgentEnvRunner(filtered_ppo(num_envs_per_env_runner=2))
    runner.sample(num_timesteps=10)
    state = runner.get_state()["env_to_module"][0]
    assert from_plain(state["running_stats"]["mean"]).shape == (4,)
