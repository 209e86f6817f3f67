"""MultiAgentEnvRunner in this process (no Ray): batching per module, turns, cuts across sample()
calls, metrics, and the build-time and run-time errors that name the agent and the policy."""

import itertools
import subprocess
import sys
import textwrap

import gymnasium as gym
import numpy as np
import pytest
import ray
from helpers import small_ppo

import rlcourse.course.multi_agent_envs  # noqa: F401  (registers the course's envs)
from rlcourse.callbacks.callbacks import Callbacks
from rlcourse.core.rl_module.numpy_mlp import InferenceModule
from rlcourse.core.rl_module.rl_module_spec import RLModuleSpec
from rlcourse.env.env_runner import EnvRunner
from rlcourse.env.multi_agent_env import MultiAgentEnv
from rlcourse.env.multi_agent_env_runner import MultiAgentEnvRunner

pytestmark = pytest.mark.timeout(120)

# Runner actors get this module's envs and mapping functions by value (they cannot import tests/).
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


def numpy_weights(obs_dim: int, out_dim: int, seed: int = 0, hidden: int = 8) -> dict:
    """Policy weights in the torch module's layout, made without torch."""
    rng = np.random.default_rng(seed)
    sizes, weights = [obs_dim, hidden, out_dim], {}
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        weights[f"pi.{2 * i}.weight"] = rng.normal(0, 1, (fan_out, fan_in)).astype(np.float32)
        weights[f"pi.{2 * i}.bias"] = np.zeros(fan_out, np.float32)
    return weights


def make_config(env, env_config=None, policies=None, mapping=None, num_envs=1, fragment=10):
    config = (small_ppo().environment(env, env_config=env_config or {})
              .env_runners(num_envs_per_env_runner=num_envs, rollout_fragment_length=fragment)
              .rl_module(model_config={"fcnet_hiddens": [8]}).debugging(seed=0))
    return config.multi_agent(policies=policies, policy_mapping_fn=mapping)


def by_player(agent_id, episode):
    return "a" if agent_id in ("agent_0", "player_0") else "b"


def test_one_forward_pass_per_module_per_step(monkeypatch):
    calls = []
    forward = InferenceModule.forward_exploration
    monkeypatch.setattr(InferenceModule, "forward_exploration",
                        lambda self, obs: calls.append((id(self), len(obs))) or forward(self, obs))
    config = make_config("MeetingGrid", policies={"a", "b"}, mapping=by_player, num_envs=3)
    runner = MultiAgentEnvRunner(config, config.get_env_creator())
    runner.set_weights({"a": numpy_weights(4, 5), "b": numpy_weights(4, 5, seed=1)})
    episodes = runner.sample(num_timesteps=30)  # 10 env steps in each of 3 sub-envs
    assert len(calls) == 20 and {size for _, size in calls} == {3}  # both agents act every step
    assert {module for module, _ in calls} == {id(runner.modules["a"]), id(runner.modules["b"])}
    for episode in episodes:
        assert episode.agent_to_module_mapping == {"agent_0": "a", "agent_1": "b"}
    assert sum(len(e) for e in episodes) == 30


def test_an_epsilon_is_refused_naming_the_runner_and_changes_nothing():
    """Epsilon-greedy runners are DQN's, and DQN is single-agent."""
    config = make_config("MultiAgentCartPole", {"num_agents": 2}, num_envs=1, fragment=7)
    runner = MultiAgentEnvRunner(config, config.get_env_creator())
    runner.set_weights({"default_policy": numpy_weights(4, 2)})
    obs = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    before = runner.modules["default_policy"].action_dist_inputs(obs)
    with pytest.raises(NotImplementedError, match="MultiAgentEnvRunner has no epsilon-greedy"):
        runner.set_weights({"default_policy": numpy_weights(4, 2, seed=1)}, epsilon=0.5)
    assert runner.weights_seq_no == 0
    assert np.array_equal(runner.modules["default_policy"].action_dist_inputs(obs), before)


def test_chunks_continue_across_sample_calls():
    config = make_config("MultiAgentCartPole", {"num_agents": 3}, num_envs=2, fragment=7)
    runner = MultiAgentEnvRunner(config, config.get_env_creator())
    runner.set_weights({"default_policy": numpy_weights(4, 2)})
    pieces: dict[tuple, list] = {}
    for _ in range(8):
        for episode in runner.sample():
            for agent_id, agent_episode in episode.agent_episodes.items():
                pieces.setdefault((episode.id_, agent_id), []).append((episode, agent_episode))
    continued = 0
    for chunks in pieces.values():
        for (prev_ma, prev), (next_ma, nxt) in itertools.pairwise(chunks):
            assert next_ma.env_t_started == prev_ma.env_t  # the env's clock goes on
            joined = prev.concat_episode(nxt)  # same agent id_, t and observation where it stops
            assert len(joined) == len(prev) + len(nxt)
            continued += 1
    assert continued > 0
    metrics = runner.get_metrics()
    assert metrics["num_env_steps_sampled"] == 8 * 7 * 2
    # each finished episode's return counts all its chunks: CartPole pays 1 per agent step
    steps, finished = {}, set()
    for episode in {id(e): e for chunks in pieces.values() for e, _ in chunks}.values():
        steps[episode.id_] = steps.get(episode.id_, 0) + episode.agent_steps()
        if episode.is_done:
            finished.add(episode.id_)
    assert sorted(metrics["episode_returns"]) == sorted(float(steps[i]) for i in finished)
    assert set(metrics["agent_episode_returns"]) == {0, 1, 2}


def test_turn_based_episodes_give_each_player_its_own_transitions():
    config = make_config("ConnectFour", {"rows": 4, "cols": 4, "connect": 3},
                         policies={"a", "b"}, mapping=by_player, num_envs=2)
    runner = MultiAgentEnvRunner(config, config.get_env_creator())
    runner.set_weights({"a": numpy_weights(16, 4), "b": numpy_weights(16, 4, seed=1)})
    episodes = runner.sample(num_episodes=6)
    assert len(episodes) == 6
    for episode in episodes:
        assert episode.is_terminated and episode.env_t_started == 0
        assert episode.agent_steps() == len(episode)  # one mover per env step
        returns = episode.get_agent_returns()
        assert sum(returns.values()) == 0.0 and set(returns) == {"player_0", "player_1"}
        for agent_episode in episode.agent_episodes.values():
            assert agent_episode.is_terminated
            assert set(agent_episode.extra_model_outputs) == {"action_logp"}
    metrics = runner.get_metrics()
    assert set(metrics["module_episode_returns"]) == {"a", "b"}
    assert len(metrics["episode_returns"]) >= 6


class TwoShapes(MultiAgentEnv):
    """Agent "big" sees 3 numbers and has 3 actions, "small" sees 1 and has 2."""

    def __init__(self, config=None):
        self.possible_agents = self.agents = ["big", "small"]
        self.observation_spaces = {"big": gym.spaces.Box(-1, 1, (3,), np.float32),
                                   "small": gym.spaces.Box(-1, 1, (1,), np.float32)}
        self.action_spaces = {"big": gym.spaces.Discrete(3), "small": gym.spaces.Discrete(2)}
        self.rewards_stranger = bool((config or {}).get("reward_stranger"))
        self.forgets_all = bool((config or {}).get("forgets_all"))  # all done, no "__all__"
        self.t = 0
        super().__init__()

    def _obs(self):
        return {a: self.observation_spaces[a].sample() * 0 + 0.5 for a in self.agents}

    def reset(self, *, seed=None, options=None):
        self.t, self.agents = 0, self.possible_agents
        return self._obs(), {}

    def step(self, action_dict):
        assert self.action_spaces["big"].contains(action_dict.get("big", 0))
        self.t += 1
        if self.forgets_all and self.t >= 3:
            flags, self.agents = dict.fromkeys(self.agents, True), []
            return {}, {}, {**flags, "__all__": False}, {"__all__": False}, {}
        rewards = {a: float(action_dict[a]) for a in self.agents}
        if self.rewards_stranger and self.t == 3:
            rewards["ghost"] = 1.0
        done = self.t >= 5
        return self._obs(), rewards, {"__all__": done}, {"__all__": False}, {}


def test_agents_with_their_own_spaces_get_their_own_modules():
    config = make_config(TwoShapes, policies={"big", "small"}, mapping=lambda a, e: a)
    runner = MultiAgentEnvRunner(config, config.get_env_creator())
    spaces = runner.get_spaces()
    assert spaces["big"][0].shape == (3,) and spaces["small"][1] == gym.spaces.Discrete(2)
    runner.set_weights({"big": numpy_weights(3, 3), "small": numpy_weights(1, 2)})
    episodes = runner.sample(num_timesteps=10)
    assert sum(len(e) for e in episodes) == 10
    assert all(len(e.agent_episodes["big"].observations[0]) == 3 for e in episodes)


def test_a_mapping_to_an_unknown_policy_fails_at_build_time_naming_agent_and_ids():
    config = make_config("ConnectFour", policies={"main", "opponent"},
                         mapping=lambda agent_id, episode: "mian")
    with pytest.raises(ValueError,
                       match="agent 'player_0' to policy 'mian'.*policies 'main', 'opponent'"):
        MultiAgentEnvRunner(config, config.get_env_creator())


def test_a_mapping_that_goes_wrong_later_fails_naming_the_agent():
    calls = []

    def mapping(agent_id, episode):
        calls.append(agent_id)
        return "main" if len(calls) <= 40 else "nobody"  # fine while the runner is built

    config = make_config("MeetingGrid", policies={"main"}, mapping=mapping)
    runner = MultiAgentEnvRunner(config, config.get_env_creator())
    runner.set_weights({"main": numpy_weights(4, 5)})
    with pytest.raises(ValueError, match="agent 'agent_.' to policy 'nobody'"):
        runner.sample(num_timesteps=500)


def test_agents_of_different_shapes_on_one_policy_are_refused():
    config = make_config(TwoShapes, policies={"shared"}, mapping=lambda a, e: "shared")
    with pytest.raises(ValueError, match="Agent 'small'.*mapped to policy 'shared'.*agent 'big'"):
        MultiAgentEnvRunner(config, config.get_env_creator())
    wrong = RLModuleSpec(observation_space=gym.spaces.Box(-1, 1, (5,), np.float32),
                         action_space=gym.spaces.Discrete(3))
    config = make_config(TwoShapes, policies={"big": wrong, "small": None}, mapping=lambda a, e: a)
    with pytest.raises(ValueError, match="Agent 'big'.*policy 'big'.*config.multi_agent"):
        MultiAgentEnvRunner(config, config.get_env_creator())


def test_a_policy_no_agent_maps_to_needs_spaces():
    config = make_config(TwoShapes, policies={"big", "small", "spare"}, mapping=lambda a, e: a)
    with pytest.raises(ValueError, match="policy 'spare'.*spaces are unknown"):
        MultiAgentEnvRunner(config, config.get_env_creator())


def test_a_policy_no_agent_maps_to_takes_the_spaces_all_agents_share():
    """A league snapshot that the probe episodes happened not to draw still gets its spaces."""
    config = make_config("MeetingGrid", policies={"main", "spare"}, mapping=lambda a, e: "main")
    runner = MultiAgentEnvRunner(config, config.get_env_creator())
    assert runner.get_spaces()["spare"] == runner.get_spaces()["main"]


def test_an_env_that_rewards_an_agent_that_never_observed_fails_naming_it():
    config = make_config(TwoShapes, {"reward_stranger": True}, policies={"big", "small"},
                         mapping=lambda a, e: a)
    runner = MultiAgentEnvRunner(config, config.get_env_creator())
    runner.set_weights({"big": numpy_weights(3, 3), "small": numpy_weights(1, 2)})
    with pytest.raises(ValueError, match="TwoShapes rewarded agent 'ghost'.*never observed"):
        runner.sample(num_timesteps=10)


def test_an_env_whose_agents_are_all_done_without_all_fails_naming_the_fix():
    """Without "__all__" the episode would go on with empty dicts: no agent steps, no episodes."""
    config = make_config(TwoShapes, {"forgets_all": True}, policies={"big", "small"},
                         mapping=lambda a, e: a)
    runner = MultiAgentEnvRunner(config, config.get_env_creator())
    runner.set_weights({"big": numpy_weights(3, 3), "small": numpy_weights(1, 2)})
    with pytest.raises(ValueError, match=r"'TwoShapes'.*sub-env 0: every agent .* is done .*env "
                                         r"step 3.*set terminateds\['__all__'\]=True"):
        runner.sample(num_timesteps=10)


def test_a_single_agent_env_and_missing_weights_are_refused():
    config = make_config("CartPole-v1")
    with pytest.raises(TypeError, match="not a MultiAgentEnv.*make_multi_agent"):
        MultiAgentEnvRunner(config, config.get_env_creator())
    config = make_config("MeetingGrid")
    runner = MultiAgentEnvRunner(config, config.get_env_creator())
    with pytest.raises(RuntimeError, match="MultiAgentEnvRunner has no policy weights"):
        runner.sample()
    with pytest.raises(ValueError, match="no module 'main'.*'default_policy'"):
        runner.set_weights({"main": numpy_weights(4, 5)})


class SeenSamples(Callbacks):
    def on_sample_end(self, *, env_runner, samples, **kwargs):
        env_runner.seen = samples


def test_on_sample_end_and_nan_checks_run_on_the_shared_runner_frame():
    """MultiAgentEnvRunner is an EnvRunner: sample()'s frame calls on_sample_end and checks the
    episodes for NaNs (tests/test_nonfinite.py) as the single-agent runner does."""
    config = make_config("MeetingGrid").callbacks(SeenSamples)
    runner = MultiAgentEnvRunner(config=config)
    episodes = runner.sample(num_timesteps=20)
    assert isinstance(runner, EnvRunner) and runner.seen is episodes


def test_a_runner_built_alone_initializes_its_modules():
    config = make_config("MeetingGrid", policies={"a", "b"}, mapping=by_player)
    runner = MultiAgentEnvRunner(config=config)
    assert sum(len(e) for e in runner.sample(num_timesteps=20)) == 20


def test_the_runner_imports_no_torch():
    code = textwrap.dedent("""
        import sys
        import numpy as np
        import rlcourse.course.multi_agent_envs
        from rlcourse.algorithms.ppo.ppo import PPOConfig
        from rlcourse.env.multi_agent_env_runner import MultiAgentEnvRunner
        config = PPOConfig().environment("MultiAgentCartPole", env_config={"num_agents": 2})
        config.validate()
        runner = MultiAgentEnvRunner(config, config.get_env_creator())
        rng = np.random.default_rng(0)
        runner.set_weights({"default_policy": {
            "pi.0.weight": rng.normal(size=(64, 4)), "pi.0.bias": np.zeros(64),
            "pi.2.weight": rng.normal(size=(64, 64)), "pi.2.bias": np.zeros(64),
            "pi.4.weight": rng.normal(size=(2, 64)), "pi.4.bias": np.zeros(2)}})
        steps = sum(e.agent_steps() for e in runner.sample(num_timesteps=50))
        print(steps > 0, "torch" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "False"]


@pytest.mark.timeout(240)
def test_a_runner_actor_samples_and_sends_episodes_back(ray_session):
    config = make_config("ConnectFour", {"rows": 4, "cols": 4, "connect": 3},
                         policies={"a", "b"}, mapping=by_player, num_envs=2)
    runner = ray.remote(num_cpus=0.1)(MultiAgentEnvRunner).remote(
        config, config.get_env_creator(), worker_index=1)
    try:
        weights = {"a": numpy_weights(16, 4), "b": numpy_weights(16, 4, seed=1)}
        result = ray.get(runner.sample_and_get_metrics.remote(weights, 0, num_timesteps=40),
                         timeout=180)  # the actor's process starts first
        assert result.weights_seq_no == 0
        assert sum(len(e) for e in result.episodes) == 40
        for episode in result.episodes:
            assert episode.agent_to_module_mapping_fn is None  # the runner stayed behind
            assert set(episode.agent_to_module_mapping.values()) <= {"a", "b"}
            assert sum(len(a) for a in episode.agent_episodes.values()) == episode.agent_steps()
        assert result.metrics["num_env_steps_sampled"] == 40
    finally:
        ray.kill(runner)


def test_greedy_sampling_takes_each_modules_best_action():
    config = make_config("MeetingGrid", policies={"a", "b"}, mapping=by_player)
    runner = MultiAgentEnvRunner(config, config.get_env_creator())
    weights = {"a": numpy_weights(4, 5), "b": numpy_weights(4, 5, seed=1)}
    runner.set_weights(weights)
    for episode in runner.sample(num_timesteps=30, explore=False):
        for agent_id, agent_episode in episode.agent_episodes.items():
            assert agent_episode.extra_model_outputs == {}
            module = runner.modules[episode.module_for(agent_id)]
            logits = module.action_dist_inputs(agent_episode.observations[:-1])
            np.testing.assert_array_equal(agent_episode.actions, logits.argmax(axis=1))
