"""CheckpointKeeper: best/ follows the best score, keeper.json survives a restart, a bad metric is
caught, a killed copy leaves the old best, and a run killed with SIGKILL resumes exactly."""

import json
import math
import os
import queue
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from keeper_run import config, summary

from rlcourse.algorithms.algorithm import Algorithm
from rlcourse.algorithms.ppo.ppo import PPOConfig
from rlcourse.utils.checkpoint_keeper import CheckpointKeeper

pytestmark = pytest.mark.timeout(300)

ROOT = Path(__file__).resolve().parents[1]
METRIC = "evaluation/env_runners/episode_return_mean"


def _evaluation_never_due() -> PPOConfig:
    """Evaluation configured but not within a test: its scores are put into the results by hand."""
    return config().evaluation(evaluation_interval=1000)


def _weights(algo) -> dict[str, np.ndarray]:
    return {name: value.copy() for name, value in algo.learner_group.get_weights().items()}


def _assert_restores_to(path: Path, weights: dict[str, np.ndarray]) -> None:
    algo = Algorithm.from_checkpoint(path)
    try:
        restored = algo.learner_group.get_weights()
        assert set(restored) == set(weights)
        for name, value in weights.items():
            np.testing.assert_array_equal(restored[name], value, err_msg=name)
    finally:
        algo.stop()


def _with_score(result: dict, score: float | None) -> dict:
    """`result` with the evaluation score `score` (None: no evaluation this iteration)."""
    if score is not None:
        result["evaluation"] = {"env_runners": {"episode_return_mean": score}}
    return result


def test_best_follows_the_best_evaluation_return(tmp_path, algo_factory):
    algo = algo_factory(config())
    keeper = CheckpointKeeper(tmp_path)
    assert keeper.best_path is None and keeper.best_score is None
    returns, weights, kept = [], [], []
    for _ in range(4):
        result = algo.train()
        returns.append(result["evaluation"]["env_runners"]["episode_return_mean"])
        weights.append(_weights(algo))
        kept.append(keeper.update(algo, result))
    best = int(np.argmax(returns))  # the first of equal returns: a tie is not better
    assert kept == [r > max(returns[:i], default=-math.inf) for i, r in enumerate(returns)]
    assert (keeper.best_score, keeper.best_iteration) == (returns[best], best + 1)
    assert json.loads((tmp_path / "keeper.json").read_text()) == {
        "metric": METRIC, "mode": "max", "best_score": returns[best], "best_iteration": best + 1}
    _assert_restores_to(keeper.best_path, weights[best])
    _assert_restores_to(keeper.latest_path, weights[-1])


def test_with_parallel_evaluation_the_best_is_the_checkpoint_that_was_evaluated(
        ray_session, tmp_path, algo_factory):
    """Parallel evaluation scores the weights an iteration starts with: the checkpoint of the
    iteration before, which the keeper keeps as best (the first iteration's start: never saved)."""
    algo = algo_factory(config().env_runners(num_cpus_per_env_runner=0.5).evaluation(
        evaluation_interval=1, evaluation_num_env_runners=1, evaluation_parallel_to_training=True))
    keeper = CheckpointKeeper(tmp_path)
    returns, weights, kept = [], [], []
    for _ in range(5):
        result = algo.train()
        returns.append(result["evaluation"]["env_runners"]["episode_return_mean"])
        kept.append(keeper.update(algo, result))
        weights.append(_weights(algo))
    best = 1 + int(np.argmax(returns[1:]))  # returns[i] scored the weights after iteration i
    assert kept[0] is False
    assert (keeper.best_score, keeper.best_iteration) == (returns[best], best)
    _assert_restores_to(keeper.best_path, weights[best - 1])


@pytest.mark.parametrize("mode, kept, best", [
    ("max", [False, True, False, True, False, False], 4),
    ("min", [False, True, False, False, True, False], 5),
])
def test_missing_nan_and_equal_scores_are_not_a_new_best(tmp_path, algo_factory, mode, kept, best):
    scores = [math.nan, 5.0, None, 7.0, 3.0, 7.0]  # None: an iteration without evaluation
    algo = algo_factory(_evaluation_never_due())
    keeper = CheckpointKeeper(tmp_path, mode=mode)
    weights, results = [], []
    for score in scores:
        results.append(keeper.update(algo, _with_score(algo.train(), score)))
        weights.append(_weights(algo))
    assert results == kept
    assert (keeper.best_score, keeper.best_iteration) == (scores[best - 1], best)
    _assert_restores_to(keeper.best_path, weights[best - 1])
    _assert_restores_to(keeper.latest_path, weights[-1])


def test_a_wrong_metric_or_mode_is_a_value_error_naming_it(tmp_path, algo_factory):
    with pytest.raises(ValueError, match="mode='maximum'"):
        CheckpointKeeper(tmp_path, mode="maximum")
    algo = algo_factory(_evaluation_never_due())
    result = _with_score(algo.train(), 10.0)
    typo = CheckpointKeeper(tmp_path, metric="evaluation/env_runners/episode_reward_mean")
    with pytest.raises(ValueError, match=r"episode_reward_mean.*has no key 'episode_reward_mean'.*"
                                         r"\['episode_return_mean'\]"):
        typo.update(algo, result)
    assert not (tmp_path / "best").exists()
    first_key = CheckpointKeeper(tmp_path, metric="evalution/env_runners/episode_return_mean")
    with pytest.raises(ValueError, match="the result has no key 'evalution'"):
        first_key.update(algo, result)
    with pytest.raises(ValueError, match="metric='evaluation/env_runners' is dict, not a number"):
        CheckpointKeeper(tmp_path, metric="evaluation/env_runners").update(algo, result)
    assert not typo.update(algo, algo.train())  # no "evaluation" key: no evaluation, no error


def test_a_new_keeper_on_the_same_root_keeps_the_best(tmp_path, algo_factory):
    algo = algo_factory(_evaluation_never_due())
    first = CheckpointKeeper(tmp_path, mode="min")
    for score in (4.0, 2.0, 3.0):
        first.update(algo, _with_score(algo.train(), score))
    with pytest.raises(ValueError, match="holds the checkpoints of a run.*resume=True"):
        CheckpointKeeper(tmp_path, mode="min")  # a new run must not inherit the old best silently
    again = CheckpointKeeper(tmp_path, mode="min", resume=True)
    assert (again.best_score, again.best_iteration, again.best_path) == (2.0, 2, tmp_path / "best")
    assert not again.update(algo, _with_score(algo.train(), 2.5))
    assert again.update(algo, _with_score(algo.train(), 1.0)) and again.best_iteration == 5
    with pytest.raises(ValueError, match=r"keeper\.json keeps the best by .*mode='min'.*mode='max'"):
        CheckpointKeeper(tmp_path, resume=True)
    with pytest.raises(ValueError, match="metric='env_runners/episode_return_mean'"):
        CheckpointKeeper(tmp_path, metric="env_runners/episode_return_mean", mode="min", resume=True)


def test_an_evaluation_metric_without_evaluation_is_a_value_error_naming_the_fix(tmp_path,
                                                                                  algo_factory):
    algo = algo_factory(config().evaluation(evaluation_interval=None))
    with pytest.raises(ValueError, match=rf"metric='{METRIC}'.*does not evaluate.*config\.evaluation"
                                         r"\(evaluation_interval=.*'env_runners/episode_return_"):
        CheckpointKeeper(tmp_path).update(algo, algo.train())
    assert not (tmp_path / "latest").exists()
    # A run that saved latest/ but never a best (no finite score) is still a run: not overwritten.
    keeper = CheckpointKeeper(tmp_path, metric="env_runners/episode_return_mean")
    result = algo.train()
    result["env_runners"]["episode_return_mean"] = math.nan
    assert not keeper.update(algo, result) and not (tmp_path / "keeper.json").exists()
    with pytest.raises(ValueError, match=r"holds the checkpoints of a run \(latest/\).*resume=True"):
        CheckpointKeeper(tmp_path, metric="env_runners/episode_return_mean")
    assert CheckpointKeeper(tmp_path, metric="env_runners/episode_return_mean",
                            resume=True).best_path is None


@pytest.mark.parametrize("text, error", [('{"metric": "evaluation/env_r', "JSONDecodeError"),
                                         (json.dumps({"metric": METRIC, "mode": "max"}),
                                          "KeyError: 'best_score'"),
                                         ("[1, 2]", "TypeError")])
def test_a_broken_keeper_json_is_a_value_error_naming_the_file(tmp_path, text, error):
    (tmp_path / "keeper.json").write_text(text)
    with pytest.raises(ValueError, match=re.escape(str(tmp_path / "keeper.json"))
                       + rf" is not a keeper record \({error}.*restore it, or delete it"):
        CheckpointKeeper(tmp_path, resume=True)


def test_a_copy_killed_halfway_leaves_the_old_best_and_is_cleaned_up(tmp_path, algo_factory):
    algo = algo_factory(_evaluation_never_due())
    keeper = CheckpointKeeper(tmp_path)
    keeper.update(algo, _with_score(algo.train(), 1.0))
    best_weights = _weights(algo)
    # What a run killed while copying a new best leaves: a half-written version in best/ (its
    # manifest not yet swapped in), and a half-written keeper.json beside the real one.
    half = tmp_path / "best" / "v-0123456789abcdef"
    half.mkdir()
    (half / "learner.pt").write_bytes(b"half a tensor file")
    (tmp_path / ".keeper.json.tmp").write_text('{"metric": "eval')
    _assert_restores_to(keeper.best_path, best_weights)
    again = CheckpointKeeper(tmp_path, resume=True)
    assert again.best_score == 1.0
    assert again.update(algo, _with_score(algo.train(), 2.0))
    assert not half.exists() and not (tmp_path / ".keeper.json.tmp").exists()
    _assert_restores_to(again.best_path, _weights(algo))


def _lines(stream, into: queue.Queue) -> None:
    for line in stream:
        into.put(line)
    into.put(None)


def _run_and_kill_after(root: Path, iteration: int, log: Path) -> list[dict]:
    """Start keeper_run.py in a process group of its own, SIGKILL it once it printed `iteration`
    (it goes on for many more), and return the lines it printed; nothing is left running."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    with open(log, "w") as stderr:
        proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "keeper_run.py"), str(root),
                                 "1000"], stdout=subprocess.PIPE, stderr=stderr, text=True,
                                env=env, start_new_session=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=_lines, args=(proc.stdout, lines), daemon=True).start()
    printed = []
    try:
        while not printed or printed[-1]["iteration"] < iteration:
            line = lines.get(timeout=120)
            assert line is not None, f"the run ended early: {log.read_text()[-2000:]}"
            printed.append(json.loads(line))
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the run and anything it started (not reaped yet)
        returncode = proc.wait(timeout=30)
        proc.stdout.close()
    assert returncode == -signal.SIGKILL, "the run must still be training when it is killed"
    return printed


def test_a_killed_run_resumes_exactly(tmp_path):
    printed = _run_and_kill_after(tmp_path, 3, tmp_path / "stderr.txt")
    keeper = CheckpointKeeper(tmp_path, resume=True)
    kept_score, kept_at = keeper.best_score, keeper.best_iteration  # the killed run's best
    algo = Algorithm.from_checkpoint(keeper.latest_path)
    try:
        restored_at = algo.iteration  # 3, or a later one saved before the kill landed
        end = max(6, restored_at + 2)
        resumed = []
        while algo.iteration < end:
            result = algo.train()
            keeper.update(algo, result)
            resumed.append(summary(result))
        resumed_weights = _weights(algo)
    finally:
        algo.stop()
    with config().build_algo() as uninterrupted:
        expected = [summary(uninterrupted.train()) for _ in range(end)]
        expected_weights = _weights(uninterrupted)
    assert restored_at >= 3
    assert printed == expected[:len(printed)]  # the killed run was this run, evaluation and all
    assert kept_at <= restored_at
    assert kept_score == expected[kept_at - 1]["evaluation"] == max(
        s["evaluation"] for s in expected[:kept_at])
    assert resumed == expected[restored_at:]  # training and evaluation go on as if never killed
    for name, value in expected_weights.items():
        np.testing.assert_array_equal(resumed_weights[name], value, err_msg=name)


def test_evaluation_after_a_resume_matches_an_uninterrupted_run(tmp_path):
    with config().build_algo() as algo:
        for _ in range(2):
            algo.train()
        algo.save_to_path(tmp_path / "ckpt")
        expected = [summary(algo.train())["evaluation"] for _ in range(2)]
    algo = Algorithm.from_checkpoint(tmp_path / "ckpt")
    try:
        assert [summary(algo.train())["evaluation"] for _ in range(2)] == expected
    finally:
        algo.stop()
