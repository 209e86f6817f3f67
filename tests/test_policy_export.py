"""Acting without an Algorithm: RLModule.from_checkpoint loads the trained module alone (no Ray, no
runners, no Learner), and export_policy writes a file that torch runs without rlcourse. The
Algorithm, the loaded module and the export give the same actions (CartPole, and Discrete spaces
with a start)."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import small_ppo
from test_bad_input import OffsetEnv
from test_rl_module import TinyModule

from rlcourse.algorithms.algorithm import Algorithm
from rlcourse.callbacks.callbacks import Callbacks
from rlcourse.connectors.env_to_module import FlattenObservations
from rlcourse.core.rl_module.module_loading import export_policy, greedy_env_actions
from rlcourse.core.rl_module.rl_module import RLModule
from rlcourse.utils.checkpoints import CheckpointError

pytestmark = pytest.mark.timeout(180)
TESTS = Path(__file__).resolve().parent

ENVS = {"CartPole-v1": np.random.default_rng(0).uniform(-0.3, 0.3, (64, 4)).astype(np.float32),
        OffsetEnv: np.arange(10, 15)}


@pytest.fixture(scope="module", params=list(ENVS), ids=["cartpole", "discrete-start"])
def trained(request, tmp_path_factory):
    """(algorithm, checkpoint path, observations): a local PPO after one iteration, saved."""
    config = (small_ppo().environment(request.param)
              .training(train_batch_size_per_learner=200, minibatch_size=100).debugging(seed=0))
    if request.param is OffsetEnv:  # Discrete cells: one-hot by the connector, in the export too
        config.env_runners(env_to_module_connector=FlattenObservations)
    algo = config.build_algo()
    algo.train()
    path = algo.save_to_path(tmp_path_factory.mktemp("ckpt"))
    yield algo, path, ENVS[request.param]
    algo.stop()


def run_python(code: str, cwd) -> str:
    """Run `code` in a fresh interpreter and return its last line of output."""
    paths = os.pathsep.join([str(TESTS.parent), str(TESTS), os.environ.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120, cwd=cwd, env={**os.environ, "PYTHONPATH": paths})
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def test_algorithm_loaded_module_and_export_act_alike(trained, tmp_path):
    algo, path, obs = trained
    expected = algo.compute_actions(obs)
    module = RLModule.from_checkpoint(path, allowed=[OffsetEnv])
    assert np.array_equal(greedy_env_actions(module, obs), expected)
    file = export_policy(module, tmp_path / "policy.pt2")
    policy = torch.export.load(file).module()
    assert np.array_equal(policy(torch.as_tensor(obs)).numpy(), expected)
    assert np.array_equal(policy(torch.as_tensor(obs[:1])).numpy(), expected[:1])  # any batch size
    assert all(algo.action_space.contains(int(a)) for a in expected)


def test_the_export_runs_with_torch_alone(trained, tmp_path):
    algo, path, obs = trained
    file = export_policy(RLModule.from_checkpoint(path, allowed=[OffsetEnv]), tmp_path / "p.pt2")
    out = run_python(f"""
        import sys
        sys.modules["rlcourse"] = sys.modules["gymnasium"] = None  # importing them fails
        import torch
        policy = torch.export.load({str(file)!r}).module()
        print(policy(torch.tensor({obs.tolist()!r})).tolist())
        """, cwd=tmp_path)
    assert json.loads(out) == algo.compute_actions(obs).tolist()


def test_loading_a_module_starts_no_ray(trained, tmp_path):
    _, path, obs = trained
    out = run_python(f"""
        import numpy as np, ray
        from test_bad_input import OffsetEnv
        from rlcourse.core.rl_module.rl_module import RLModule
        from rlcourse.core.rl_module.module_loading import greedy_env_actions
        module = RLModule.from_checkpoint({path!r}, allowed=[OffsetEnv])
        greedy_env_actions(module, np.asarray({obs.tolist()!r}))
        print(ray.is_initialized())
        """, cwd=tmp_path)
    assert out == "False"


def test_a_missing_or_damaged_checkpoint_names_the_file(trained, tmp_path):
    with pytest.raises(CheckpointError, match=str(tmp_path / "nothing")):
        RLModule.from_checkpoint(tmp_path / "nothing")
    _, path, _ = trained
    damaged = tmp_path / "damaged"
    shutil.copytree(path, damaged)
    (weights,) = damaged.glob("v-*/learner.pt")
    weights.write_bytes(weights.read_bytes()[:100])
    with pytest.raises(CheckpointError, match="learner.pt"):
        RLModule.from_checkpoint(damaged, allowed=[OffsetEnv])


def test_a_custom_module_class_must_be_allowed(tmp_path):
    """The allowlist: the module class a checkpoint names is imported only if the caller allows it;
    `TinyModule.from_checkpoint(path)` allows its own class."""
    config = (small_ppo().environment("CartPole-v1").rl_module(rl_module_class=TinyModule)
              .training(train_batch_size_per_learner=200, minibatch_size=100).debugging(seed=0))
    with config.build_algo() as algo:
        path = algo.save_to_path(tmp_path / "ckpt")
        obs = ENVS["CartPole-v1"]
        expected = algo.compute_actions(obs)
    with pytest.raises(CheckpointError, match="TinyModule"):
        RLModule.from_checkpoint(path)
    for module in (RLModule.from_checkpoint(path, allowed=[TinyModule]),
                   TinyModule.from_checkpoint(path)):
        assert isinstance(module, TinyModule)
        assert np.array_equal(greedy_env_actions(module, obs), expected)


class MyCallbacks(Callbacks):
    """A learner's own callbacks: the checkpoint names them, the module does not need them."""


def test_a_module_loads_without_the_callbacks_its_algorithm_trained_with(tmp_path):
    config = (small_ppo().environment("CartPole-v1").callbacks(MyCallbacks)
              .training(train_batch_size_per_learner=200, minibatch_size=100).debugging(seed=0))
    with config.build_algo() as algo:
        path = algo.save_to_path(tmp_path / "ckpt")
        obs = ENVS["CartPole-v1"]
        expected = algo.compute_actions(obs)
    with pytest.raises(CheckpointError, match="MyCallbacks"):  # the Algorithm needs them
        Algorithm.from_checkpoint(path)
    assert np.array_equal(greedy_env_actions(RLModule.from_checkpoint(path), obs), expected)
