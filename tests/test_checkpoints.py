"""Checkpoints: exact resume in a new process, atomic writes, and clear errors for bad files."""

import hashlib
import json
import os
import pickle
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from fault_envs import CountingEnv
from helpers import small_ppo

from rlcourse.algorithms.algorithm import Algorithm
from rlcourse.env.registry import register_env
from rlcourse.utils.checkpoints import STATE_FILE, CheckpointError, read_checkpoint

pytestmark = pytest.mark.timeout(300)

ROOT = Path(__file__).resolve().parents[1]
SMALL = {"train_batch_size_per_learner": 500, "minibatch_size": 100, "num_epochs": 2}


def _config(seed=3):
    return (small_ppo().environment("CartPole-v1").training(**SMALL).debugging(seed=seed)
            .env_runners(num_envs_per_env_runner=2))


def _weights(algo) -> dict[str, np.ndarray]:
    return algo.learner_group.get_weights()


# Runs in a fresh interpreter: load the checkpoint, train, save the weights.
CONTINUE = textwrap.dedent("""
    import sys
    import numpy as np
    from rlcourse.algorithms.algorithm import Algorithm
    algo = Algorithm.from_checkpoint(sys.argv[1])
    for _ in range(int(sys.argv[3])):
        algo.train()
    np.savez(sys.argv[2], **algo.learner_group.get_weights())
    algo.stop()
""")


def test_resumed_run_in_a_new_process_matches_an_uninterrupted_run(tmp_path):
    """Save at iteration 3 with episodes mid-way, continue 3 iterations in a new process: the
    weights equal those of a run that never stopped, bit for bit."""
    algo = _config().build_algo()
    try:
        for _ in range(3):
            algo.train()
        path = algo.save_to_path(tmp_path / "ckpt")
        for _ in range(3):
            result = algo.train()
        uninterrupted = _weights(algo)
    finally:
        algo.stop()
    out = tmp_path / "resumed.npz"
    subprocess.run([sys.executable, "-c", CONTINUE, path, str(out), "3"], check=True, cwd=ROOT,
                   timeout=240)
    resumed = dict(np.load(out))
    assert set(resumed) == set(uninterrupted)
    for key, value in uninterrupted.items():
        np.testing.assert_array_equal(resumed[key], value, err_msg=key)
    assert result["training_iteration"] == 6


def test_restore_continues_counters_and_metrics(tmp_path):
    with _config().build_algo() as algo:
        for _ in range(2):
            before = algo.train()
        path = algo.save_to_path(tmp_path / "ckpt")
    with _config(seed=99).build_algo() as other:
        other.restore_from_path(path)
        after = other.train()
    assert after["training_iteration"] == 3
    assert after["num_env_steps_sampled_lifetime"] > before["num_env_steps_sampled_lifetime"]
    assert after["env_runners"]["num_episodes_lifetime"] > before["env_runners"]["num_episodes_lifetime"]


def test_restore_continues_the_sub_env_restart_count(tmp_path):
    config = (small_ppo().environment(CountingEnv, env_config={"failure_rate": 0.01})
              .training(**SMALL).fault_tolerance(restart_failed_sub_environments=True)
              .debugging(seed=0))
    with config.build_algo() as algo:
        for _ in range(3):
            before = algo.train()["env_runners"]
        path = algo.save_to_path(tmp_path / "ckpt")
    assert before["num_sub_env_restarts_lifetime"] > 0  # ~15 expected in 1500 steps
    with config.build_algo() as other:
        other.restore_from_path(path)
        after = other.train()["env_runners"]
    assert after["num_sub_env_restarts_lifetime"] == (before["num_sub_env_restarts_lifetime"]
                                                      + after["num_sub_env_restarts"])


def _iteration(path) -> int:
    return read_checkpoint(path)[0]["algorithm"]["iteration"]


def test_saving_replaces_an_old_checkpoint_and_a_crash_leaves_the_old_one(tmp_path, monkeypatch):
    with _config().build_algo() as algo:
        algo.train()
        path = Path(algo.save_to_path(tmp_path / "ckpt"))
        first = _iteration(path)
        algo.train()
        algo.save_to_path(path)  # replaces it
        assert _iteration(path) == 2

        def crash(*args, **kwargs):
            raise OSError("disk full (simulated)")

        algo.train()
        monkeypatch.setattr(torch, "save", crash)
        with pytest.raises(OSError, match="disk full"):
            algo.save_to_path(path)
    assert first == 1
    assert _iteration(path) == 2  # intact
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]  # nothing written beside it
    assert len([p for p in path.iterdir() if p.name.startswith("v-")]) == 1  # nor half-written
    Algorithm.from_checkpoint(path).stop()  # and it still loads


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    with _config().build_algo() as algo:
        algo.train()
        return Path(algo.save_to_path(tmp_path_factory.mktemp("saved") / "ckpt"))


@pytest.fixture
def broken(checkpoint, tmp_path) -> Path:
    """A copy of the checkpoint to damage."""
    copy = tmp_path / "copy"
    shutil.copytree(checkpoint, copy)
    return copy


def _file(checkpoint: Path, name: str) -> Path:
    """The current version's file `name` (e.g. learner.pt) in a checkpoint directory."""
    return checkpoint / json.loads((checkpoint / STATE_FILE).read_text())["version"] / name


def _rehash(checkpoint: Path, name: str) -> None:
    """Record the SHA-256 of the file `name` as it is now in the manifest, as an attacker who
    knows the format would (the manifest's own SHA-256 is updated too)."""
    manifest = json.loads((checkpoint / STATE_FILE).read_text())
    manifest["files"][name] = hashlib.sha256(_file(checkpoint, name).read_bytes()).hexdigest()
    fields = {k: v for k, v in manifest.items() if k != "sha256"}
    manifest["sha256"] = hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()
    (checkpoint / STATE_FILE).write_text(json.dumps(manifest))


def test_a_truncated_tensor_file_is_named(broken):
    data = _file(broken, "learner.pt").read_bytes()
    _file(broken, "learner.pt").write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match=r"learner\.pt does not match the SHA-256"):
        Algorithm.from_checkpoint(broken)


def test_a_tampered_tensor_file_is_named(broken):
    data = bytearray(_file(broken, "learner.pt").read_bytes())
    data[-100] ^= 0xFF
    _file(broken, "learner.pt").write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"learner\.pt does not match"):
        Algorithm.from_checkpoint(broken)


def test_a_truncated_state_file_is_named(broken):
    text = (broken / STATE_FILE).read_text()
    (broken / STATE_FILE).write_text(text[: len(text) // 2])
    with pytest.raises(CheckpointError, match=f"{STATE_FILE} is not valid JSON"):
        Algorithm.from_checkpoint(broken)


def test_a_missing_checkpoint_is_named(tmp_path):
    with pytest.raises(CheckpointError, match=f"No checkpoint at .*{STATE_FILE} is missing"):
        Algorithm.from_checkpoint(tmp_path / "nowhere")


class RunsCode:
    """Unpickling this would run a command: what a malicious checkpoint would carry."""

    def __reduce__(self):
        return (os.system, ("touch pwned",))


def test_loading_cannot_run_code_even_with_matching_checksums(broken, tmp_path, monkeypatch):
    """A .pt file whose pickle calls os.system, with its SHA-256 updated to match, is refused."""
    with open(_file(broken, "learner.pt"), "wb") as f:
        pickle.dump(RunsCode(), f, protocol=2)
    _rehash(broken, "learner.pt")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CheckpointError, match=r"learner\.pt cannot be loaded as tensors"):
        Algorithm.from_checkpoint(broken)
    assert not (tmp_path / "pwned").exists()


def test_a_lambda_env_cannot_be_saved_and_the_error_says_what_to_do(tmp_path):
    import gymnasium as gym
    config = small_ppo().environment(lambda ctx: gym.make("CartPole-v1"))
    with config.build_algo() as algo, pytest.raises(CheckpointError, match="config.env=.*register_env"):
        algo.save_to_path(tmp_path / "ckpt")
    assert not (tmp_path / "ckpt").exists()


def _make_cartpole(ctx):
    import gymnasium as gym
    return gym.make("CartPole-v1")


def test_registered_env_names_and_module_level_creators_round_trip(tmp_path):
    register_env("checkpointed-cartpole", _make_cartpole)
    for env in ("checkpointed-cartpole", _make_cartpole):
        with small_ppo().environment(env).training(**SMALL).build_algo() as algo:
            path = algo.save_to_path(tmp_path / "ckpt")
        restored = Algorithm.from_checkpoint(path, allowed=[_make_cartpole])
        try:
            assert restored.config.env == env
        finally:
            restored.stop()


FIXTURES = ROOT / "tests" / "fixtures"


def test_a_checkpoint_written_before_the_package_layout_moved_still_loads():
    """tests/fixtures/checkpoint_before_layout was saved when the modules sat at rlcourse's root
    (its config names rlcourse.algorithms.ppo:PPOConfig and rlcourse.callbacks:Callbacks)."""
    from rlcourse.callbacks import Callbacks

    saved = np.load(FIXTURES / "checkpoint_before_layout_weights.npz")
    algo = Algorithm.from_checkpoint(FIXTURES / "checkpoint_before_layout")
    try:
        assert type(algo).__name__ == "PPO" and algo.iteration == 1
        assert algo.config.callbacks_class is Callbacks
        weights = _weights(algo)
        assert sorted(weights) == sorted(saved.files)
        for name in saved.files:
            np.testing.assert_array_equal(weights[name], saved[name])
        assert algo.train()["training_iteration"] == 2
    finally:
        algo.stop()
