"""A restore is all or nothing: a checkpoint that does not fit is refused before anything changes,
and after a restore every remote runner acts with the restored weights."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers import small_impala, small_ppo

from rlcourse.algorithms.algorithm import Algorithm
from rlcourse.algorithms.impala.impala import IMPALAConfig
from rlcourse.core.rl_module.default_model_config import space_info
from rlcourse.core.rl_module.numpy_mlp import NumpyMLP
from rlcourse.utils.checkpoints import STATE_FILE, CheckpointError, read_checkpoint

pytestmark = pytest.mark.timeout(300)

SMALL = {"train_batch_size_per_learner": 200, "minibatch_size": 100, "num_epochs": 1}


def _config(hiddens=(8,), num_envs=2, seed=0):
    return (small_ppo().environment("CartPole-v1").training(**SMALL).debugging(seed=seed)
            .rl_module(model_config={"fcnet_hiddens": list(hiddens), "fcnet_activation": "tanh"})
            .env_runners(num_envs_per_env_runner=num_envs))


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    """A PPO checkpoint after two iterations (episodes mid-way in 2 sub-envs), network [8]."""
    with _config().build_algo() as algo:
        algo.train()
        algo.train()
        return Path(algo.save_to_path(tmp_path_factory.mktemp("saved") / "ckpt"))


def _snapshot(algo) -> dict:
    """What a failed restore must leave as it was."""
    return {"iteration": algo.iteration,
            "trained": algo.num_env_steps_trained_lifetime,
            "episodes": algo.episode_stats.get_state()["num_episodes_lifetime"],
            "runner_steps": algo.env_runner_group.get_state()[0]["num_env_steps_lifetime"],
            "weights": algo.learner_group.get_weights(),
            "seq_no": algo.env_runner_group.weights_seq_no}


def _assert_unchanged(algo, before: dict) -> None:
    after = _snapshot(algo)
    for key in ("iteration", "trained", "episodes", "runner_steps", "seq_no"):
        assert after[key] == before[key], key
    for name, value in before["weights"].items():
        np.testing.assert_array_equal(after["weights"][name], value, err_msg=name)
    assert algo.train()["training_iteration"] == before["iteration"] + 1  # and it goes on


@pytest.mark.parametrize("config, match", [
    (_config(hiddens=(16,)), r"network differs from this algorithm's: its first differing "
                             r"weight 'pi\.0\.weight' is \(8, 4\) in the checkpoint, \(16, 4\) "
                             r"here\. Build the algorithm with the checkpoint's model_config"),
    (_config().environment("Acrobot-v1"),
     r"trained on another env: config\.env is 'CartPole-v1' in the checkpoint, 'Acrobot-v1' "
     r"here \(this algorithm's module sees Box\(6,\) observations and Discrete\(3\) actions\), "
     r"so its first differing weight 'pi\.0\.weight' is \(8, 4\) .* \(8, 6\) here\. Restore it "
     r"into an algorithm on the checkpoint's env"),
    (_config(num_envs=3), r"the checkpoint has 2 sub-envs, this runner 3.*num_envs_per_env_runner"),
    (small_impala().environment("CartPole-v1").training(train_batch_size_per_learner=200)
     .rl_module(model_config={"fcnet_hiddens": [8], "fcnet_activation": "tanh"}),
     r"is of 'rlcourse.algorithms.ppo.ppo:PPOConfig'.*IMPALAConfig"),
], ids=["network_size", "env", "sub_env_count", "algorithm"])
def test_a_checkpoint_that_does_not_fit_changes_nothing(checkpoint, config, match):
    with config.build_algo() as algo:
        if not isinstance(config, IMPALAConfig):  # IMPALA's learner thread would go on updating
            algo.train()                          # the weights after train() returns
        before = _snapshot(algo)
        with pytest.raises(CheckpointError, match=f"{checkpoint}: .*{match}"):
            algo.restore_from_path(checkpoint)
        _assert_unchanged(algo, before)


def test_a_missing_file_is_named_and_the_checkpoint_called_incomplete(checkpoint, tmp_path):
    copy = tmp_path / "ckpt"
    shutil.copytree(checkpoint, copy)
    version = json.loads((copy / STATE_FILE).read_text())["version"]
    (copy / version / "learner.pt").unlink()
    with pytest.raises(CheckpointError, match=r"learner\.pt is missing: the checkpoint is incomplete"):
        read_checkpoint(copy)
    with _config().build_algo() as algo:
        algo.train()
        before = _snapshot(algo)
        with pytest.raises(CheckpointError, match=r"learner\.pt is missing"):
            algo.restore_from_path(copy)
        _assert_unchanged(algo, before)


def test_after_a_restore_every_remote_runner_acts_with_the_restored_weights(
        checkpoint, ray_session, algo_factory):
    config = _config(seed=5).env_runners(num_env_runners=2, num_cpus_per_env_runner=0.25)
    algo = algo_factory(config)
    algo.train()
    _, tensors = read_checkpoint(checkpoint)
    restored = NumpyMLP(space_info(algo.observation_space, algo.action_space), config.model_config)
    restored.set_state({k: v.numpy() for k, v in tensors["learner.pt"]["module"].items()})
    obs = np.random.default_rng(0).normal(size=(16, 4)).astype(np.float32)
    expected = restored.action_dist_inputs(obs)

    def logits(runner):
        return runner.module.action_dist_inputs(obs)

    assert not any(np.allclose(out, expected) for out in algo.env_runner_group.foreach_env_runner(
        logits))  # another seed: other weights before the restore
    algo.restore_from_path(checkpoint)
    outputs = algo.env_runner_group.foreach_env_runner(logits)
    assert len(outputs) == 2
    for out in outputs:
        np.testing.assert_array_equal(out, expected)
    assert algo.train()["training_iteration"] == 3


def test_from_checkpoint_still_restores_exactly(checkpoint):
    """The checks pass for the algorithm the checkpoint's own config builds."""
    state, tensors = read_checkpoint(checkpoint)
    algo = Algorithm.from_checkpoint(checkpoint)
    try:
        assert algo.iteration == state["algorithm"]["iteration"] == 2
        for name, value in tensors["learner.pt"]["module"].items():
            np.testing.assert_array_equal(algo.learner_group.get_weights()[name], value.numpy())
    finally:
        algo.stop()
