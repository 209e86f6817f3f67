"""Stateful RLModules (model_config use_lstm): sequences and masks, the runners' state, the NumPy
cell against torch's, IMPALA's LSTM and V-trace on sequences, the errors, and APPO learning what a
policy without memory cannot (lesson 12 trains PPO with and without an LSTM and asserts the gap)."""

from functools import partial
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from rlcourse import DQNConfig, IMPALAConfig, PPOConfig
from rlcourse.algorithms.impala.vtrace import vtrace
from rlcourse.connectors.common.add_time_dim_to_batch_and_zero_pad import (
    add_time_dim,
    sequence_lengths,
)
from rlcourse.core import LOSS_MASK, STATE_IN, STATE_OUT
from rlcourse.core.learner.learner import forward_all_obs
from rlcourse.core.learner.learner_group import LearnerGroup
from rlcourse.core.rl_module.default_model_config import space_info
from rlcourse.core.rl_module.lstm_module import DefaultLSTMModule
from rlcourse.core.rl_module.numpy_lstm import NumpyLSTM
from rlcourse.core.rl_module.numpy_mlp import Categorical, InferenceModule
from rlcourse.core.rl_module.rl_module import DefaultActorCriticModule
from rlcourse.course.envs import StatelessCartPole
from rlcourse.course.tuned_example import load_tuned_example, reached
from rlcourse.course.tuned_examples_suite import TUNED_EXAMPLES
from rlcourse.env.single_agent_env_runner import SingleAgentEnvRunner
from rlcourse.env.single_agent_episode import SingleAgentEpisode
from rlcourse.utils.postprocessing import flatten_episodes
from rlcourse.utils.serialization import to_plain
from rlcourse.utils.validation import ConfigError

LSTM = {"use_lstm": True, "vf_share_layers": True, "lstm_cell_size": 8, "fcnet_hiddens": [16],
        "max_seq_len": 4}


def lstm_config(**model_config) -> PPOConfig:
    return (PPOConfig().environment(StatelessCartPole)
            .env_runners(num_env_runners=0, num_envs_per_env_runner=3)
            .training(train_batch_size_per_learner=120, minibatch_size=40, num_epochs=1)
            .rl_module(model_config={**LSTM, **model_config}).debugging(seed=0))


def episode(n: int, state_start: float, **kwargs) -> SingleAgentEpisode:
    """n steps whose observation, action and states count up from their index (state_start + t)."""
    states = (state_start + np.arange(n, dtype=np.float32))[:, None, None] * np.ones((1, 2, 3))
    return SingleAgentEpisode(np.arange(n + 1.0)[:, None], np.arange(n), np.ones(n),
                              {"action_logp": np.zeros(n), STATE_IN: states, STATE_OUT: states + 1},
                              **kwargs)


def test_episodes_are_cut_into_zero_padded_sequences_with_a_mask_and_their_first_states():
    assert sequence_lengths([5, 3, 4], 2).tolist() == [2, 2, 1, 2, 1, 2, 2]
    chunks = [episode(5, 100.0, is_terminated=True), episode(3, 200.0)]
    flat = flatten_episodes(chunks)
    flat["obs"] = flat["all_obs"][flat["obs_index"]]
    seqs = add_time_dim(flat, [5, 3], 2, ("obs", "actions"))
    assert seqs[LOSS_MASK].tolist() == [[True, True], [True, True], [True, False],
                                         [True, True], [True, False]]
    assert seqs["actions"].tolist() == [[0, 1], [2, 3], [4, 0], [0, 1], [2, 0]]  # 0: padding
    assert seqs["obs"][:, :, 0].tolist() == [[0, 1], [2, 3], [4, 0], [0, 1], [2, 0]]
    # Each sequence starts from the state stored for its first step, not from zeros.
    assert seqs[STATE_IN][:, 0, 0].tolist() == [100, 102, 104, 200, 202]
    assert seqs[STATE_IN].shape == (5, 2, 3)
    with pytest.raises(ValueError, match="max_seq_len"):
        sequence_lengths([3], 0)


def test_runners_reset_the_state_at_episode_starts_and_carry_it_across_sample_calls():
    runner = SingleAgentEnvRunner(lstm_config())
    first = runner.sample(num_timesteps=60)
    second = runner.sample(num_timesteps=60)
    assert runner.module.is_stateful and runner.module.state.shape == (3, 2, 8)
    for chunk in first + second:
        states_in, states_out = chunk.extra_model_outputs[STATE_IN], chunk.extra_model_outputs[STATE_OUT]
        assert states_in.shape == (len(chunk), 2, 8)
        np.testing.assert_array_equal(states_in[1:], states_out[:-1])  # one step's out is the next's in
        if chunk.t_started == 0:  # an episode's first step starts from the initial state
            assert not states_in[0].any()
        assert states_out.any()
    ended = {c.id_: c for c in first if not c.is_done}
    continued = [c for c in second if c.id_ in ended]
    assert len(continued) == 3  # the 3 sub-envs' ongoing episodes go on in the next sample()
    for chunk in continued:
        np.testing.assert_array_equal(chunk.extra_model_outputs[STATE_IN][0],
                                      ended[chunk.id_].extra_model_outputs[STATE_OUT][-1])
    restored = SingleAgentEnvRunner(lstm_config())  # a runner's checkpoint keeps the states
    saved = runner.get_state()
    assert restored.check_state(saved, "state") is None
    restored.set_state(saved)
    np.testing.assert_array_equal(restored.module.state, runner.module.state)
    wrong = {**saved, "episodes": {**saved["episodes"], "module_state": to_plain(np.zeros((3, 2, 9)))}}
    assert "state.episodes.module_state" in restored.check_state(wrong, "state")  # was taken
    del wrong["episodes"]["module_state"]  # a KeyError mid-restore before
    assert "state.episodes has no module_state" in restored.check_state(wrong, "state")
    runner.stop()
    restored.stop()


def test_the_numpy_lstm_acts_as_the_torch_module_step_by_step_and_over_a_sequence():
    env = StatelessCartPole()
    module = DefaultLSTMModule(env.observation_space, env.action_space,
                               {**PPOConfig().model_config, **LSTM, "fcnet_activation": "relu"})
    numpy_net = NumpyLSTM(space_info(env.observation_space, env.action_space), module.model_config)
    numpy_net.set_state(module.get_state(inference_only=True))
    runners = [InferenceModule(numpy_net, Categorical()), module.get_inference_module()]
    obs = np.random.default_rng(0).normal(size=(6, 5, 2)).astype(np.float32)  # 5 sub-envs, 6 steps
    for runner in runners:
        runner.reset_state(np.ones(5, dtype=bool))
    for t in range(6):
        (a, sa), (b, sb) = [(r.action_dist_inputs(obs[t]), r.state) for r in runners]
        np.testing.assert_allclose(a, b, atol=1e-5)
        np.testing.assert_allclose(sa, sb, atol=1e-5)
    sequence = module.forward_train({"obs": torch.as_tensor(obs.swapaxes(0, 1)),
                                     STATE_IN: torch.zeros(5, 2, 8)})
    np.testing.assert_allclose(sequence["action_dist_inputs"][:, -1].detach().numpy(), a, atol=1e-5)
    np.testing.assert_allclose(sequence[STATE_OUT].detach().numpy(), sa, atol=1e-5)
    runners[0].reset_state(np.array([True, False, False, False, True]))
    assert not runners[0].state[[0, 4]].any() and runners[0].state[1:4].all(axis=(1, 2)).any()


def test_the_learner_trains_on_masked_sequences_and_padding_changes_nothing():
    algo = lstm_config().build_algo()
    try:
        learner = algo.learner_group.local_learner
        episodes, _ = algo.env_runner_group.sample(num_timesteps=120)
        batch = learner.build_batch(episodes)
        mask = batch[LOSS_MASK]
        assert mask.sum() == sum(len(ep) for ep in episodes) and mask.shape[1] == 4
        assert not batch["advantages"][~mask].any()
        batch = {k: learner.to_device(v) for k, v in batch.items()}
        loss, _ = learner.compute_loss(batch)
        garbage = {k: v.clone() for k, v in batch.items()}
        for key in ("actions", "action_logp", "advantages", "value_targets"):
            garbage[key][~garbage[LOSS_MASK]] = 3
        garbage["obs"][~garbage[LOSS_MASK]] = 7.0  # after the real steps: cannot reach them
        assert torch.allclose(learner.compute_loss(garbage)[0], loss)
        result = algo.train()
        assert result["learners"]["__all_modules__"]["num_env_steps_trained"] == 120
        weights = []  # what each minibatch's gradient weighs in the learners' average
        learner.apply_gradients = lambda size, apply=learner.apply_gradients: (
            weights.append(size), apply(size))[1]
        learner.update(episodes)
        assert sum(weights) == 120  # its real steps (it was its padded sequences, about 40)
    finally:
        algo.stop()


def test_a_config_without_use_lstm_builds_the_stateless_module_as_before():
    config = PPOConfig().environment("CartPole-v1").env_runners(num_env_runners=0)
    assert config.get_default_rl_module_spec().module_class is DefaultActorCriticModule
    runner = SingleAgentEnvRunner(config)
    chunk = runner.sample(num_timesteps=8)[0]
    assert not runner.module.is_stateful and set(chunk.extra_model_outputs) == {"action_logp"}
    runner.stop()


@pytest.mark.parametrize(("config", "message"), [
    (lstm_config(max_seq_len=0), r"max_seq_len must be a whole number >= 1"),
    (lstm_config(lstm_cell_size=2.5), r"lstm_cell_size must be a whole number >= 1"),
    (lstm_config(max_seq_len=50), r"max_seq_len=50 must be at most minibatch_size=40"),
    (lstm_config(vf_share_layers=False), r"use_lstm=True needs vf_share_layers=True"),
    (lstm_config(use_lstm="yes"), r"use_lstm must be True"),
    (DQNConfig().environment(StatelessCartPole).rl_module(model_config=LSTM),
     r"use_lstm=True is not implemented for DQN"),
    (lstm_config().multi_agent(policies={"default_policy"}),
     r"use_lstm=True is not implemented for multi-agent PPO"),
])
def test_bad_lstm_settings_are_clear_errors(config, message):
    with pytest.raises(ConfigError, match=message) as error:
        config.validate()
    assert "model_config" in str(error.value)


def test_impala_runs_the_lstm_from_the_stored_states_and_vtrace_over_the_real_steps():
    """The learner's values and logits at every observation equal the cell stepped one observation
    at a time, restarted from the stored state at each sequence's start (a chunk's bootstrap
    observation continues its last sequence or starts one from the last STATE_OUT); V-trace on the
    sequences equals V-trace on those flat values."""
    config = (IMPALAConfig().environment(StatelessCartPole)
              .env_runners(num_env_runners=0, num_envs_per_env_runner=3)
              .training(train_batch_size_per_learner=60).rl_module(model_config=LSTM)
              .debugging(seed=0))
    algo = config.build_algo()
    try:
        runner, learner = algo.env_runner_group.local_env_runner, algo.learner_group.local_learner
        # Chunks of 10 then 12 steps (12: the bootstrap observation starts a sequence of its own).
        episodes = runner.sample(num_timesteps=30) + runner.sample(num_timesteps=36)
        assert any(ep.extra_model_outputs[STATE_IN][0].any() for ep in episodes)
        with torch.no_grad():  # the learner moves on from the runner's weights (the policy lag)
            for param in learner.module.parameters():
                param.add_(0.3 * torch.randn_like(param))
        batch = {k: learner.to_device(v) for k, v in learner.build_batch(episodes).items()}
        with torch.no_grad():
            out = forward_all_obs(learner.module, batch)
            _, _, logp, vs, pg_advantages = learner.forward_with_vtrace(batch)
            stepped = []
            for ep in episodes:
                states = np.concatenate([ep.extra_model_outputs[STATE_IN],
                                         ep.extra_model_outputs[STATE_OUT][-1:]])
                for t, obs in enumerate(ep.observations):
                    if t % LSTM["max_seq_len"] == 0:
                        state = torch.as_tensor(states[t])
                    step = learner.module.forward_train({"obs": torch.as_tensor(obs)[None, None],
                                                         STATE_IN: state[None]})
                    state = step[STATE_OUT][0]
                    stepped.append((step["action_dist_inputs"][0, 0],
                                    learner.module.compute_values({}, step["embeddings"])[0, 0]))
        logits, values = (torch.stack(column).numpy() for column in zip(*stepped, strict=True))
        np.testing.assert_allclose(out["action_dist_inputs"].numpy(), logits, atol=1e-5)
        np.testing.assert_allclose(out["values"].numpy(), values, atol=1e-5)
        index = batch["obs_index"].numpy()
        expected = vtrace(batch["action_logp"].numpy(), logp.numpy(), batch["rewards"].numpy(),
                          values[index], values[index + 1], batch["terminateds"].numpy(),
                          batch["chunk_ends"].numpy(), config.gamma)
        np.testing.assert_allclose(vs.numpy(), expected[0], atol=1e-4)
        np.testing.assert_allclose(pg_advantages.numpy(), expected[1], atol=1e-4)
        assert learner.update(episodes)["num_env_steps_trained"] == sum(map(len, episodes))
    finally:
        algo.stop()


@pytest.mark.learning
def test_appo_with_an_lstm_reaches_its_tuned_examples_mark_on_stateless_cartpole():
    """tuned_examples/appo/stateless_cartpole_appo.py (RLlib's mark: 150 within 500k env steps),
    single-threaded as the lessons train; out of test_learning.py's matrix (ELSEWHERE there)."""
    example = load_tuned_example(TUNED_EXAMPLES / "appo" / "stateless_cartpole_appo.py")
    torch.set_num_threads(1)
    algo = example.config.build_algo()
    try:
        while not any(reached(result := algo.train(), example.stop).values()):
            pass
    finally:
        algo.stop()
    assert all(reached(result, example.pass_criteria).values()), (
        result["num_env_steps_sampled_lifetime"], result["env_runners"]["episode_return_mean"])


def test_learners_sharing_an_lstm_batch_need_a_sequence_per_minibatch():
    """Each learner splits its sequences into minibatches: 4 + 3 steps in sequences of up to 4
    are 2, too few for 3 minibatches (its 7 steps passed, and that learner crashed while the
    others waited for it in the all-reduce)."""
    config = lstm_config(max_seq_len=4).learners(num_learners=2)
    shards = [[episode(10, 0)], [episode(4, 0), episode(3, 0)]]
    check = partial(LearnerGroup._check_shards, SimpleNamespace(config=config))
    with pytest.raises(ConfigError, match=r"learners \[3, 2\] sequences, and each needs at least 3"):
        check(shards, 3)
    check(shards, 2)
