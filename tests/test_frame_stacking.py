"""Frame stacking (connectors/env_to_module/frame_stacking.py, connectors/learner/frame_stacking.py):
runners act on stacks of the last k frames but send single frames; the learner rebuilds the same
stacks, at episode starts (zeros before the first frame, as RLlib) and across sample() chunks."""

import gymnasium as gym
import numpy as np
import pytest
from helpers import record_batches, small_ppo

from rlcourse.connectors.env_to_module import FlattenObservations, FrameStackingEnvToModule
from rlcourse.connectors.env_to_module.frame_stacking import stack_frames
from rlcourse.connectors.learner import FrameStackingLearner
from rlcourse.course.pixel_grid_world import PixelGridWorld
from rlcourse.env.single_agent_env_runner import SingleAgentEnvRunner
from rlcourse.env.single_agent_episode import SingleAgentEpisode
from rlcourse.utils.validation import ConfigError

K = 3
MODEL = {"conv_filters": [[4, 3, 1], [8, 5, 1]], "fcnet_hiddens": [16]}


def stacking_config(k: int = K):
    return (small_ppo().environment(PixelGridWorld, env_config={"size": 5, "pixels_per_cell": 1,
                                                                "max_episode_steps": 7})
            .env_runners(num_envs_per_env_runner=3,
                         env_to_module_connector=lambda env: FrameStackingEnvToModule(num_frames=k))
            .training(learner_connector=lambda obs, act: FrameStackingLearner(num_frames=k))
            .rl_module(model_config=MODEL).debugging(seed=3))


def test_push_starts_episodes_from_zeros_and_keeps_the_newest_frame_last():
    stacking = FrameStackingEnvToModule(num_frames=3)
    frames = [np.full((2, 1, 1, 1), v, np.float32) for v in (1, 2, 3, 4)]
    stacking.push(frames[0])
    assert stacking.stacked[:, 0, 0].tolist() == [[0, 0, 1], [0, 0, 1]]
    stacking.push(frames[1], np.array([False, False]))
    stacking.push(frames[2], np.array([False, True]))  # sub-env 1 starts a new episode
    assert stacking.stacked[:, 0, 0].tolist() == [[1, 2, 3], [0, 0, 3]]
    assert stacking.lookback()[:, :, 0, 0, 0].tolist() == [[1, 2], [0, 0]]
    assert stack_frames(np.arange(5.0).reshape(5, 1, 1, 1), 3)[:, 0, 0].tolist() == [
        [0, 1, 2], [1, 2, 3], [2, 3, 4]]


def test_learner_stacks_equal_the_stacks_the_runner_acted_on_across_chunks_and_episode_starts():
    runner = SingleAgentEnvRunner(stacking_config())
    seen = []  # what the module got, step by step: [N, H, W, C * K]
    forward = runner.module.forward_exploration
    runner.module.forward_exploration = lambda obs: (seen.append(obs.copy()), forward(obs))[1]
    assert runner.observation_space.shape == (5, 5, 3 * K)
    learner = FrameStackingLearner(num_frames=K)
    chunks = [runner.sample(num_timesteps=15) for _ in range(3)]  # 5 steps x 3 sub-envs each
    assert any(e.t_started > 0 and e.lookback_observations is not None for e in chunks[1])
    assert any(e.t_started == 0 for chunk in chunks for e in chunk[1:])  # episodes started inside
    for k, episodes in enumerate(chunks):
        assert all(e.observations.shape[1:] == (5, 5, 3) for e in episodes)  # single frames sent
        for i, group in enumerate(per_sub_env(learner(episodes), steps=5)):
            rebuilt = np.concatenate([e.observations[:-1] for e in group])
            assert np.array_equal(rebuilt, np.stack([seen[5 * k + t][i] for t in range(5)]))
    runner.stop()


def per_sub_env(episodes: list[SingleAgentEpisode], steps: int) -> list[list[SingleAgentEpisode]]:
    """Each sub-env's chunks of one sample (SingleAgentEnvRunner returns them sub-env by sub-env,
    in step order, `steps` steps each)."""
    groups: list[list[SingleAgentEpisode]] = [[]]
    for episode in episodes:
        if sum(len(e) for e in groups[-1]) == steps:
            groups.append([])
        groups[-1].append(episode)
    return groups


def test_a_continuing_chunk_without_its_frames_is_refused():
    episode = SingleAgentEpisode(np.zeros((3, 2, 2, 1)), np.zeros(2, int), np.zeros(2), t_started=4)
    with pytest.raises(ValueError, match="needs 2.*FrameStackingEnvToModule"):
        FrameStackingLearner(num_frames=3)([episode])


def test_frame_stacking_takes_images_and_comes_last():
    vector = gym.spaces.Box(0, 1, (4,), np.float32)
    with pytest.raises(ConfigError, match="num_frames.*image frames"):
        FrameStackingEnvToModule(4).recompute_output_observation_space(vector, None)
    with pytest.raises(ConfigError, match="num_frames"):
        FrameStackingEnvToModule(0)
    config = stacking_config().env_runners(
        env_to_module_connector=lambda env: [FrameStackingEnvToModule(2), FlattenObservations()])
    with pytest.raises(ConfigError, match="FrameStackingEnvToModule last"):
        SingleAgentEnvRunner(config)


def test_ppo_trains_on_stacks_rebuilt_by_the_learner(monkeypatch):
    config = stacking_config().training(train_batch_size_per_learner=120, minibatch_size=60,
                                        num_epochs=1)
    with config.build_algo() as algo:
        learner = algo.learner_group.local_learner
        batches, before = record_batches(learner, monkeypatch), learner.get_weights()
        result = algo.train()
        after = learner.get_weights()
    trained = result["learners"]["default_policy"]
    assert trained["num_env_steps_trained"] >= 120 and np.isfinite(trained["total_loss"])
    assert batches and all(b["obs"].shape[1:] == (5, 5, 3 * K) for b in batches)  # K frames each
    assert any(not np.array_equal(before[name], after[name]) for name in before)


@pytest.mark.parametrize("env_frames, learner, words", [
    (K, None, rf"runners stack {K} .*learner 1.*FrameStackingLearner\(num_frames={K}\)"),
    (K, lambda o, a: FrameStackingLearner(2), rf"learner 2.*FrameStackingLearner\(num_frames={K}\)"),
    (None, lambda o, a: FrameStackingLearner(2), r"runners stack 1 .*FrameStackingEnvToModule\("
     r"num_frames=2\) in env_to_module_connector\), or leave learner_connector unset"),
    (K, FrameStackingLearner(K), "pass a function of the two spaces"),
    (K, lambda spaces: FrameStackingLearner(K), "pass a function of the two spaces"),
    (K, lambda o, a: FrameStackingLearner(0), r"\.\.\.\): stack at least 1 frame"),
])
def test_runners_and_learner_must_stack_alike_and_learner_connector_is_a_function(env_frames, learner,
                                                                                  words):
    config = stacking_config().training(learner_connector=learner).env_runners(
        env_to_module_connector=env_frames and (lambda env: FrameStackingEnvToModule(env_frames)))
    with pytest.raises(ConfigError, match=r"config\.training\(learner_connector=.*" + words):
        config.build_algo()


def test_learner_connector_must_be_a_function_and_runner_state_restores_with_stacks():
    with pytest.raises(ConfigError, match="learner_connector.*FrameStackingLearner"):
        stacking_config().training(learner_connector=4).validate()
    runner, restored = SingleAgentEnvRunner(stacking_config()), SingleAgentEnvRunner(stacking_config())
    runner.sample(num_timesteps=6)
    restored.set_state(runner.get_state())  # mid-episode: the stacks restart from the saved frame
    episodes = restored.sample(num_timesteps=6)
    assert FrameStackingLearner(num_frames=K)(episodes)[0].observations.shape[1:] == (5, 5, 3 * K)
    runner.stop()
    restored.stop()
