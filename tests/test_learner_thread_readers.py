"""IMPALA's learner thread updates in the background; checkpoints, evaluation and get_module taken
meanwhile must each see the learner as it was after one whole update, never in the middle of one."""

import sys

import numpy as np
import pytest
import ray.cloudpickle
import torch
from helpers import small_impala

from rlcourse.algorithms.impala.impala import IMPALAConfig
from rlcourse.algorithms.impala.impala_learner import IMPALALearner
from rlcourse.utils.checkpoints import read_checkpoint

pytestmark = pytest.mark.timeout(300)


def fingerprint(module_state: dict, optimizer_state: dict) -> tuple:
    """Exact sums of every weight and every optimizer tensor (Adam's step counts and moments)."""
    weights = tuple(float(t.double().sum()) for t in module_state.values())
    moments = tuple(float(torch.as_tensor(v).double().sum())
                    for slot in optimizer_state["state"].values() for v in slot.values())
    return weights, moments


class FingerprintIMPALALearner(IMPALALearner):
    """Records the fingerprint of its module and optimizer after every update (inside the update,
    so while the learner thread holds its lock)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fingerprints = {0: fingerprint(self.module.state_dict(), self.optimizer.state_dict())}

    def update(self, episodes, num_minibatches=None):
        results = super().update(episodes, num_minibatches)
        self.fingerprints[self.num_updates] = fingerprint(self.module.state_dict(),
                                                          self.optimizer.state_dict())
        return results


class FingerprintIMPALAConfig(IMPALAConfig):
    def get_default_learner_class(self) -> type:
        return FingerprintIMPALALearner


ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # runner actors cannot import us


def test_checkpoints_evaluations_and_modules_taken_during_updates_belong_to_one_update(
        ray_session, algo_factory, tmp_path):
    config = (small_impala(FingerprintIMPALAConfig).environment("CartPole-v1").debugging(seed=0)
              .env_runners(num_env_runners=2, num_envs_per_env_runner=4, num_cpus_per_env_runner=0.5)
              .training(train_batch_size_per_learner=100)
              .evaluation(evaluation_duration=2))
    algo = algo_factory(config)
    learner = algo.learner_group.local_learner
    overlapped = 0  # saves during which the learner thread finished at least one update
    for _ in range(25):
        algo.train()  # leaves batches in the learner thread's queue: it goes on updating
        before = learner.num_updates
        path = algo.save_to_path(tmp_path / "ckpt")
        module = algo.get_module()
        algo.evaluate()
        overlapped += learner.num_updates > before
        state, tensors = read_checkpoint(path)
        saved = tensors["learner.pt"]
        version = state["learner"]["num_updates"]
        assert fingerprint(saved["module"], saved["optimizer"]) == learner.fingerprints[version], (
            f"the checkpoint of update {version} holds weights or optimizer state of another update")
        module_weights = fingerprint(module.state_dict(), {"state": {}})[0]
        assert module_weights in {weights for weights, _ in learner.fingerprints.values()}, (
            "get_module() returned weights that no finished update produced")
    assert overlapped >= 3, f"only {overlapped} of 25 saves overlapped an update: nothing was tested"


def test_a_restore_numbers_the_next_updates_after_the_restored_weights(ray_session, algo_factory,
                                                                       tmp_path):
    """After a restore, IMPALA's runners must take the learner's next weights (versions go on from
    the restored one), and policy lag stays a small non-negative number of updates."""
    config = (small_impala().environment("CartPole-v1").debugging(seed=1)
              .env_runners(num_env_runners=1, num_envs_per_env_runner=2, num_cpus_per_env_runner=0.5)
              .training(train_batch_size_per_learner=100))
    trained = algo_factory(config)
    for _ in range(10):
        trained.train()
    path = trained.save_to_path(tmp_path / "ckpt")
    saved_version = trained.env_runner_group.weights_seq_no
    trained.stop()
    restored = algo_factory(config)
    restored.restore_from_path(path)
    lags = [restored.train()["learners"]["default_policy"]["policy_lag"] for _ in range(5)]
    held = restored.env_runner_group.foreach_env_runner(lambda runner: runner.weights_seq_no)
    assert min(held) > saved_version, (held, saved_version)
    assert all(0 <= lag < 10 for lag in lags), lags
    assert np.isfinite(restored.evaluate()["env_runners"]["episode_return_mean"])
