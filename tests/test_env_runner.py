"""EnvRunner on real gymnasium vector envs, in this process (no Ray).

Most tests use CountingEnv, whose observation says exactly where it is: [sub-env index, episode
number, step, last action]. That lets the tests check every returned chunk against the truth:
consecutive steps of one episode, the true final observation at its end, nothing lost or repeated.
"""

import math
from collections import defaultdict

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.vector import AsyncVectorEnv, SyncVectorEnv
from helpers import record_batches, small_ppo

from rlcourse.connectors.env_to_module import FlattenObservations
from rlcourse.core.rl_module.rl_module import build_module
from rlcourse.env.env_context import EnvContext
from rlcourse.env.registry import get_env_creator, register_env
from rlcourse.env.single_agent_env_runner import SingleAgentEnvRunner

LENGTH = 4  # sub-env i's episodes last LENGTH + i steps, so sub-envs end episodes at different times


class CountingEnv(gym.Env):
    """Observation [vector_index, episode, step, last action]; reward step + 0.5 * action.

    An episode ends after `length + vector_index` steps: terminated, or truncated if
    env_config["truncate"]. With env_config["hide_episode"] the episode number reads 0.
    """

    def __init__(self, ctx: EnvContext):
        self.vector_index = ctx.vector_index
        self.length = ctx.get("length", LENGTH) + ctx.vector_index
        self.truncate = ctx.get("truncate", False)
        self.hide_episode = ctx.get("hide_episode", False)
        self.observation_space = gym.spaces.Box(-1.0, 1e6, (4,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.episode, self.t, self.last_action = -1, 0, -1

    def _obs(self) -> np.ndarray:
        episode = 0 if self.hide_episode else self.episode
        return np.array([self.vector_index, episode, self.t, self.last_action], np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.episode, self.t, self.last_action = self.episode + 1, 0, -1
        return self._obs(), {}

    def step(self, action):
        if self.t >= self.length:
            raise RuntimeError("step() after the episode ended, without reset()")
        self.t += 1
        self.last_action = int(action)
        done = self.t >= self.length
        return (self._obs(), self.t + 0.5 * self.last_action, done and not self.truncate,
                done and self.truncate, {})


def make_config(num_envs=1, fragment=5, mode="SYNC", **env_config):
    return (small_ppo()
            .environment(CountingEnv, env_config=env_config)
            .env_runners(num_envs_per_env_runner=num_envs, rollout_fragment_length=fragment,
                         gym_env_vectorize_mode=mode)
            .rl_module(model_config={"fcnet_hiddens": [8]})
            .debugging(seed=0))


def module_state(config, runner):
    torch.manual_seed(0)
    module = build_module(config, runner.observation_space, runner.action_space)
    return module, module.get_state(inference_only=True)


@pytest.fixture
def make_runner():
    """Build EnvRunners with weights set, and stop them (closing ASYNC subprocesses) afterwards."""
    runners = []

    def make(config, env_creator=None, worker_index=0):
        runner = SingleAgentEnvRunner(config, env_creator or config.get_env_creator(), worker_index)
        runners.append(runner)
        runner.set_weights(module_state(config, runner)[1])
        return runner

    yield make
    for runner in runners:
        runner.stop()


# -- checking chunks against what CountingEnv did ----------------------------------------------

def check_chunk(ep, length, truncate):
    """One chunk: consecutive steps of one episode of one sub-env, arrays aligned."""
    obs, n = ep.observations, len(ep)
    assert n >= 1
    assert len(ep.actions) == len(ep.rewards) == n and len(obs) == n + 1
    assert len(np.unique(obs[:, 0])) == 1, "chunk mixes sub-envs"
    assert len(np.unique(obs[:, 1])) == 1, "chunk crosses an episode boundary"
    np.testing.assert_array_equal(obs[:, 2], ep.t_started + np.arange(n + 1))
    np.testing.assert_array_equal(obs[1:, 3], ep.actions)  # the env saw the recorded action
    np.testing.assert_allclose(ep.rewards, obs[1:, 2] + 0.5 * ep.actions)
    for values in ep.extra_model_outputs.values():
        assert len(values) == n
    if ep.is_done:
        # The true final observation, not the next episode's reset observation (step 0).
        assert obs[-1, 2] == length == ep.t
        assert (ep.is_truncated, ep.is_terminated) == (truncate, not truncate)
    else:
        assert obs[-1, 2] < length


def check_stream(calls, num_envs, truncate, length=LENGTH):
    """`calls`: the chunks of consecutive sample() calls. Checks each chunk and the joins between
    chunks; and that per sub-env the transitions are exactly the env's, none lost or repeated."""
    per_env = defaultdict(list)
    for chunks in calls:
        for ep in chunks:
            per_env[int(ep.observations[0, 0])].append(ep)
    assert sorted(per_env) == list(range(num_envs))
    seen_ids = set()
    for i, chunks in per_env.items():
        prev, transitions = None, []
        for ep in chunks:
            check_chunk(ep, length + i, truncate)
            if prev is not None and not prev.is_done:  # continues the previous chunk
                assert ep.id_ == prev.id_
                assert ep.t_started == prev.t
                np.testing.assert_array_equal(ep.observations[0], prev.observations[-1])
            else:  # a new episode: new id, starts at the reset observation
                assert ep.id_ not in seen_ids
                assert ep.t_started == 0
            seen_ids.add(ep.id_)
            transitions += [tuple(o) for o in ep.observations[:-1, 1:3]]
            prev = ep
        first = int(transitions[0][0])  # the env's episode counter when these calls began
        expected = [(e, s) for e in range(first, first + len(transitions)) for s in range(length + i)]
        assert transitions == expected[:len(transitions)]


# -- (a) autoreset exactness -----------------------------------------------------------------

@pytest.mark.parametrize("truncate", [False, True], ids=["terminates", "truncates"])
@pytest.mark.parametrize("num_envs, fragment", [(1, 3), (1, 9), (3, 2), (3, 7)])
def test_chunks_are_exact_pieces_of_single_episodes(make_runner, num_envs, fragment, truncate):
    runner = make_runner(make_config(num_envs, fragment, truncate=truncate))
    calls = [runner.sample() for _ in range(5)]
    for chunks in calls:  # every call: `fragment` steps from each sub-env
        assert sum(len(ep) for ep in chunks) == fragment * num_envs
    check_stream(calls, num_envs, truncate)
    first_chunks = {int(ep.observations[0, 0]): ep for ep in reversed(calls[0])}
    assert all(ep.observations[0, 1] == 0 for ep in first_chunks.values())  # from the first reset
    assert sum(ep.is_done for chunks in calls for ep in chunks) >= num_envs  # boundaries were hit


def test_chunks_cut_across_calls_join_into_whole_episodes(make_runner):
    runner = make_runner(make_config(num_envs=2, fragment=3, length=7))
    chunks = [ep for _ in range(6) for ep in runner.sample()]
    cut_episodes = {ep.id_ for ep in chunks if ep.t_started > 0}
    assert cut_episodes  # some episodes span several sample() calls
    joined = {}
    for ep in chunks:
        joined[ep.id_] = joined[ep.id_].concat_episode(ep) if ep.id_ in joined else ep
    assert any(ep.is_done and ep.id_ in cut_episodes for ep in joined.values())  # joined and checked
    for ep in joined.values():
        if ep.is_done:
            length = 7 + int(ep.observations[0, 0])
            assert ep.t_started == 0 and len(ep) == length
            np.testing.assert_array_equal(ep.observations[:, 2], np.arange(length + 1))


# -- (b) how much sample() returns -----------------------------------------------------------

@pytest.mark.parametrize("k", [1, 3, 10, 11, 50])
def test_sample_num_timesteps_rounds_up_to_whole_vector_steps(make_runner, k):
    num_envs = 3
    runner = make_runner(make_config(num_envs=num_envs))
    total = sum(len(ep) for ep in runner.sample(num_timesteps=k))
    assert total >= k
    assert total == math.ceil(k / num_envs) * num_envs


def test_sample_without_arguments_uses_the_auto_fragment_length(make_runner):
    config = make_config(num_envs=4, fragment="auto").training(train_batch_size_per_learner=30,
                                                               minibatch_size=10)
    runner = make_runner(config)
    assert config.get_rollout_fragment_length() == 8  # ceil(30 / 4)
    assert sum(len(ep) for ep in runner.sample()) == 32


@pytest.mark.parametrize("num_envs, m", [(1, 1), (2, 3), (3, 2)])
def test_sample_num_episodes_returns_complete_episodes(make_runner, num_envs, m):
    # Episodes (200+ steps) are longer than one sampling round, so chunks must be joined.
    length = 200
    runner = make_runner(make_config(num_envs=num_envs, length=length))
    episodes = runner.sample(num_episodes=m)
    assert len(episodes) == m
    assert len({ep.id_ for ep in episodes}) == m
    assert len({tuple(ep.observations[0, :2]) for ep in episodes}) == m  # m different episodes
    for ep in episodes:
        assert ep.is_done and ep.t_started == 0
        check_chunk(ep, length + int(ep.observations[0, 0]), truncate=False)


def test_fragments_after_sample_num_episodes_start_fresh_episodes(make_runner):
    runner = make_runner(make_config(num_envs=2, fragment=3))
    before = runner.sample()
    runner.sample(num_episodes=2)
    after = runner.sample()
    assert {ep.id_ for ep in before}.isdisjoint(ep.id_ for ep in after)
    check_stream([after], num_envs=2, truncate=False)  # starts at t=0 and stays exact


# -- (c) env_config and EnvContext -----------------------------------------------------------

def test_creator_receives_env_config_worker_index_and_vector_index(make_runner):
    contexts = []

    def creator(ctx):
        contexts.append(ctx)
        return CountingEnv(ctx)

    register_env("rlcourse-test-recording-env", creator)
    config = make_config(num_envs=3, fragment=10, length=2, truncate=True)
    config.environment("rlcourse-test-recording-env")
    runner = make_runner(config, get_env_creator(config.env), worker_index=5)
    assert len(contexts) == 3
    assert all(isinstance(ctx, EnvContext) for ctx in contexts)
    assert sorted(ctx.vector_index for ctx in contexts) == [0, 1, 2]
    assert {ctx.worker_index for ctx in contexts} == {5}
    assert all(dict(ctx) == {"length": 2, "truncate": True} for ctx in contexts)
    # ... and the env used it: episodes of 2 + vector_index steps, truncated.
    done = [ep for ep in runner.sample() if ep.is_done]
    assert done and all(ep.is_truncated and len(ep) == 2 + ep.observations[0, 0] for ep in done)


# -- (d) vectorize modes ---------------------------------------------------------------------

@pytest.mark.parametrize("mode, vector_cls", [("SYNC", SyncVectorEnv), ("ASYNC", AsyncVectorEnv)])
def test_sync_and_async_vector_envs(make_runner, mode, vector_cls):
    runner = make_runner(make_config(num_envs=2, fragment=5, mode=mode, truncate=True))
    assert isinstance(runner.env, vector_cls)
    calls = [runner.sample() for _ in range(3)]
    check_stream(calls, num_envs=2, truncate=True)


# -- (e) metrics -----------------------------------------------------------------------------

def test_metrics_report_returns_summed_over_chunks(make_runner):
    runner = make_runner(make_config(num_envs=2, fragment=3, length=5))
    chunks = [ep for _ in range(7) for ep in runner.sample()]
    metrics = runner.get_metrics()
    returns, lens = defaultdict(float), defaultdict(int)
    for ep in chunks:
        returns[ep.id_] += ep.get_return()
        lens[ep.id_] += len(ep)
    finished = [ep.id_ for ep in chunks if ep.is_done]
    assert any(lens[i] > 3 for i in finished)  # some finished episodes were cut across calls
    assert sorted(metrics["episode_returns"]) == pytest.approx(sorted(returns[i] for i in finished))
    assert sorted(metrics["episode_lens"]) == sorted(lens[i] for i in finished)
    assert metrics["num_env_steps_sampled"] == 7 * 3 * 2
    again = runner.get_metrics()  # get_metrics() forgets what it reported
    assert again["episode_returns"] == [] and again["num_env_steps_sampled"] == 0


# -- (f) explore=False -----------------------------------------------------------------------

def test_explore_false_is_greedy(make_runner):
    config = make_config(num_envs=2, fragment=10, hide_episode=True)
    runner = make_runner(config)
    module, _ = module_state(config, runner)
    greedy = [ep for _ in range(3) for ep in runner.sample(explore=False)]
    action_of = {}
    for ep in greedy:
        assert "action_logp" not in ep.extra_model_outputs
        with torch.no_grad():
            logits = module.forward_inference({"obs": torch.as_tensor(ep.observations[:-1])})
        np.testing.assert_array_equal(ep.actions, logits["action_dist_inputs"].argmax(-1).numpy())
        for obs, action in zip(ep.observations[:-1], ep.actions, strict=True):
            assert action_of.setdefault(obs.tobytes(), action) == action  # same obs, same action
    # Episodes repeat their observations (hide_episode), so the check above compared real repeats.
    assert len(action_of) < sum(len(ep) for ep in greedy)


def test_explore_true_samples_and_config_explore_false_is_the_default(make_runner):
    runner = make_runner(make_config(num_envs=2, fragment=50))
    sampled = runner.sample()
    assert all("action_logp" in ep.extra_model_outputs for ep in sampled)
    # A near-uniform initial policy: sampled actions cannot all be one action.
    assert len(np.unique(np.concatenate([ep.actions for ep in sampled]))) == 2

    config = make_config(num_envs=2, fragment=10)
    config.env_runners(explore=False)
    assert all("action_logp" not in ep.extra_model_outputs for ep in make_runner(config).sample())


def test_discrete_observations_returned_as_python_ints_train(monkeypatch):
    """FrozenLake returns ints: final observations join the pipeline's int64 array, one-hot after."""
    config = (small_ppo().environment("FrozenLake-v1").debugging(seed=0)
              .env_runners(env_to_module_connector=lambda env: FlattenObservations())
              .training(train_batch_size_per_learner=400, minibatch_size=100, num_epochs=1))
    with config.build_algo() as algo:
        learner = algo.learner_group.local_learner
        batches = record_batches(learner, monkeypatch)
        result = algo.train()
    space = learner.module.observation_space  # unbounded, as RLlib's FlattenObservations makes it
    assert isinstance(space, gym.spaces.Box) and (space.shape, space.dtype) == ((16,), np.float32)
    assert result["env_runners"]["num_episodes"] > 0
    trained = result["learners"]["default_policy"]
    assert trained["num_env_steps_trained"] == 400 and np.isfinite(trained["total_loss"])
    assert len(batches) == 4
    for batch in batches:
        obs = batch["obs"]
        assert obs.dtype == torch.float32 and obs.shape == (100, 16)
        assert set(obs.unique().tolist()) == {0.0, 1.0} and bool((obs.sum(dim=1) == 1).all())


LOCAL_BUILD = """
import ray
from rlcourse import PPOConfig
config = (PPOConfig().environment("CartPole-v1").env_runners(num_env_runners=0)
          .training(train_batch_size_per_learner=400, minibatch_size=100, num_epochs=1))
with config.build_algo() as algo:
    algo.train()
    algo.evaluate()
print("ray started:", ray.is_initialized())
"""


@pytest.mark.timeout(120)
def test_a_local_algorithm_never_starts_ray():
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", LOCAL_BUILD], capture_output=True, text=True,
                         timeout=100)
    assert out.returncode == 0, out.stderr
    assert "ray started: False" in out.stdout
