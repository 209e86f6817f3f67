"""Edited checkpoint values are refused before anything is restored. The SHA-256s catch damage, not
edits by someone who recomputes them (test_checkpoint_trust's helpers do), so every restored value
is checked for type, sign, shape and finiteness, with an error naming the file and the field; and a
refused restore leaves iteration, counters, weights, filters and the replay buffer as they were
(for every algorithm's state: test_restore_every_state.py)."""

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from helpers import small_ppo
from test_checkpoint_trust import _copy, _edit_state

from rlcourse.algorithms.apex_dqn.apex_dqn import ApexDQNConfig
from rlcourse.algorithms.dqn.dqn import DQNConfig
from rlcourse.algorithms.sac.sac import SACConfig
from rlcourse.connectors.env_to_module import MeanStdFilter
from rlcourse.utils.checkpoints import STATE_JSON, CheckpointError
from rlcourse.utils.serialization import from_plain, to_plain

pytestmark = pytest.mark.timeout(300)

BUFFER = {"capacity": 2000, "type": "PrioritizedEpisodeReplayBuffer", "alpha": 0.6, "beta": 0.4}
REPLAY = dict(num_steps_sampled_before_learning_starts=64, training_intensity=1, n_step=3,
              store_buffer_in_checkpoints=True)


def _dqn():
    return (DQNConfig().environment("CartPole-v1").debugging(seed=0)
            .env_runners(rollout_fragment_length=64)
            .training(train_batch_size_per_learner=32, replay_buffer_config=BUFFER, **REPLAY)
            .rl_module(model_config={"fcnet_hiddens": [16]}))


def _sac():
    return (SACConfig().environment("Pendulum-v1").debugging(seed=0)
            .env_runners(rollout_fragment_length=64)
            .training(train_batch_size_per_learner=32, replay_buffer_config={"capacity": 2000},
                      **REPLAY)
            .rl_module(model_config={"fcnet_hiddens": [16]}))


def _apex():
    return (ApexDQNConfig().environment("CartPole-v1").debugging(seed=0)
            .env_runners(num_env_runners=1, num_cpus_per_env_runner=0.5, rollout_fragment_length=16)
            .training(train_batch_size_per_learner=16, num_steps_sampled_before_learning_starts=64,
                      min_sample_timesteps_per_iteration=128, store_buffer_in_checkpoints=True)
            .rl_module(model_config={"fcnet_hiddens": [16]}))


def mean_std_filter(env) -> MeanStdFilter:
    return MeanStdFilter()


def _ppo(activation="tanh"):
    return (small_ppo().environment("CartPole-v1").debugging(seed=0)
            .training(train_batch_size_per_learner=200, minibatch_size=100, num_epochs=1)
            .env_runners(env_to_module_connector=mean_std_filter)
            .rl_module(model_config={"fcnet_hiddens": [8], "fcnet_activation": activation}))


def _save(config, path: Path, iterations: int = 2) -> Path:
    with config.build_algo() as algo:
        for _ in range(iterations):
            algo.train()
        return Path(algo.save_to_path(path))


@pytest.fixture(scope="module")
def dqn_checkpoint(tmp_path_factory) -> Path:
    return _save(_dqn(), tmp_path_factory.mktemp("dqn") / "ckpt")


@pytest.fixture(scope="module")
def ppo_checkpoint(tmp_path_factory) -> Path:
    return _save(_ppo(), tmp_path_factory.mktemp("ppo") / "ckpt")


@pytest.fixture(scope="module")
def dqn(dqn_checkpoint):
    """One running DQN for all edits: each refused restore must leave it as it was."""
    with _dqn().build_algo() as algo:
        algo.train()
        yield algo


@pytest.fixture(scope="module")
def ppo():
    with _ppo().build_algo() as algo:
        algo.train()
        yield algo


# -- the edits ----------------------------------------------------------------------------------

def _array(edit: Callable[[np.ndarray], np.ndarray]) -> Callable[[dict], dict]:
    return lambda plain: to_plain(edit(from_plain(plain)))


def _in_buffer(path: list, edit: Callable, key: str = "dqn", buffer: str = "replay_buffer"):
    """Edit state[key][buffer] at `path` (keys and indexes) with `edit(value)`."""
    def apply(state):
        parent = state[key][buffer]
        for step in path[:-1]:
            parent = parent[step]
        parent[path[-1]] = edit(parent[path[-1]])
    return apply


def _set(path: list, value) -> Callable[[dict], None]:
    def apply(state):
        parent = state
        for step in path[:-1]:
            parent = parent[step]
        parent[path[-1]] = value
    return apply


def _slots(edit: Callable[[np.ndarray], np.ndarray]):
    return _in_buffer(["episodes", 0, "slots"], _array(edit))


def _duplicate_slot(state):
    episodes = state["dqn"]["replay_buffer"]["episodes"]
    first = from_plain(episodes[0]["slots"])
    second = from_plain(episodes[1]["slots"])
    second[0] = first[0]
    episodes[1]["slots"] = to_plain(second)


REPLAY_EDITS = {  # name -> (edit of a DQN checkpoint, the field the error names)
    "slot_out_of_range": (_slots(lambda s: s + 10_000), "dqn.replay_buffer.episodes[0].slots"),
    "slot_negative": (_slots(lambda s: s - 10_000), "dqn.replay_buffer.episodes[0].slots"),
    "duplicated_slot": (_duplicate_slot, "dqn.replay_buffer"),
    "priorities_too_short": (_in_buffer(["priorities"], _array(lambda p: p[:-1])),
                             "dqn.replay_buffer.priorities"),
    "priority_nan": (_in_buffer(["priorities"], _array(lambda p: np.where(p > 0, np.nan, p))),
                     "dqn.replay_buffer.priorities"),
    "one_row_short": (_in_buffer(["episodes", 0, "rewards"], _array(lambda r: r[:-1])),
                      "dqn.replay_buffer.episodes[0]"),
    "action_outside_space": (_in_buffer(["episodes", 0, "actions"], _array(lambda a: a + 7)),
                             "dqn.replay_buffer.episodes[0].actions"),
    "max_priority_nan": (_in_buffer(["max_priority"], lambda _: math.nan),
                         "dqn.replay_buffer.max_priority"),
    "update_credit_negative": (_set(["dqn", "update_credit"], -1.0), "dqn.update_credit"),
}
COUNTER_EDITS = {
    "iteration_str": (_set(["algorithm", "iteration"], "3"), "algorithm.iteration"),
    "iteration_negative": (_set(["algorithm", "iteration"], -2), "algorithm.iteration"),
    "trained_float": (_set(["algorithm", "num_env_steps_trained_lifetime"], 1.5),
                      "algorithm.num_env_steps_trained_lifetime"),
    "episodes_negative": (_set(["algorithm", "num_episodes_lifetime"], -1),
                          "algorithm.num_episodes_lifetime"),
    "runner_steps_negative": (_set(["env_runners", 0, "num_env_steps_lifetime"], -64),
                              "env_runners[0].num_env_steps_lifetime"),
    "episode_return_nan": (_set(["algorithm", "episode_returns"], [math.nan]),
                           "algorithm.episode_returns"),
}


def _snapshot(algo) -> dict:
    state, tensors = algo.get_state()
    return {"state": state, "weights": algo.learner_group.get_weights()}


def _assert_unchanged(algo, before: dict) -> None:
    after = _snapshot(algo)
    assert after["state"] == before["state"]  # counters, runners, filters, replay buffer, RNGs
    for name, value in before["weights"].items():
        np.testing.assert_array_equal(after["weights"][name], value, err_msg=name)


def _refused(algo, checkpoint: Path, tmp_path: Path, edit, field: str) -> None:
    path = _copy(checkpoint, tmp_path / "edited")
    _edit_state(path, edit)
    before = _snapshot(algo)
    with pytest.raises(CheckpointError) as error:
        algo.restore_from_path(path)
    message = str(error.value)
    assert str(path) in message and STATE_JSON in message and field in message, message
    _assert_unchanged(algo, before)


@pytest.mark.parametrize("case", list(REPLAY_EDITS) + list(COUNTER_EDITS))
def test_an_edited_value_is_refused_naming_the_field_and_changes_nothing(
        dqn, dqn_checkpoint, tmp_path, case):
    edit, field = {**REPLAY_EDITS, **COUNTER_EDITS}[case]
    _refused(dqn, dqn_checkpoint, tmp_path, edit, field)


def _stat(key: str, edit: Callable[[np.ndarray], np.ndarray]):
    def apply(state):
        stats = state["env_runners"][0]["env_to_module"][0]["running_stats"]
        stats[key] = _array(edit)(stats[key])
    return apply


@pytest.mark.parametrize("edit, field", [
    (_stat("mean", lambda m: m * np.nan), "env_runners[0].env_to_module[0].running_stats.mean"),
    (_stat("m2", lambda m: -m - 1), "env_runners[0].env_to_module[0].running_stats.m2"),
    (_stat("mean", lambda m: m[:2]), "env_runners[0].env_to_module[0].running_stats.mean"),
    (_stat("m2", lambda m: np.concatenate([m, m])),
     "env_runners[0].env_to_module[0].running_stats.m2"),
], ids=["mean_nan", "variance_negative", "mean_shape", "m2_shape"])
def test_edited_filter_statistics_are_refused(ppo, ppo_checkpoint, tmp_path, edit, field):
    _refused(ppo, ppo_checkpoint, tmp_path, edit, field)


def test_a_ppo_checkpoint_into_dqn_names_the_algorithm_not_a_key(dqn, ppo_checkpoint):
    before = _snapshot(dqn)
    with pytest.raises(CheckpointError, match=r"is of .*PPOConfig.*DQNConfig"):
        dqn.restore_from_path(ppo_checkpoint)
    _assert_unchanged(dqn, before)


def test_a_tanh_checkpoint_into_a_relu_algorithm_is_refused(ppo_checkpoint):
    match = r"model_config\['fcnet_activation'\] is 'tanh'"
    with _ppo("relu").build_algo() as algo, pytest.raises(CheckpointError, match=match):
        algo.restore_from_path(ppo_checkpoint)


def test_the_unedited_checkpoints_still_restore(dqn, dqn_checkpoint, ppo, ppo_checkpoint):
    for algo, checkpoint in ((dqn, dqn_checkpoint), (ppo, ppo_checkpoint)):
        algo.restore_from_path(checkpoint)
        assert algo.iteration == 2
        assert algo.train()["training_iteration"] == 3
