"""Saving replaces a checkpoint atomically: killed at any step, the path holds the old checkpoint or
the new one; saves racing on one path end with one complete checkpoint and no leftovers."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
import torch

from rlcourse.utils import checkpoints
from rlcourse.utils.checkpoints import (
    LOCK_FILE,
    STATE_FILE,
    CheckpointError,
    read_checkpoint,
    write_checkpoint,
)

pytestmark = pytest.mark.timeout(300)

ROOT = Path(__file__).resolve().parents[1]
LEGACY = ROOT / "tests" / "fixtures" / "checkpoint_before_layout"


def save(path: Path, iteration: int) -> None:
    """A small checkpoint whose JSON and tensors both say which save wrote it."""
    write_checkpoint(path, {"iteration": iteration},
                     {"learner.pt": {"w": torch.full((3,), float(iteration))}})


def label(path: Path) -> int | str:
    """Which save wrote the checkpoint at `path` ("legacy": the format-1 fixture), checking that
    its JSON and its tensors come from the same save."""
    state, tensors = read_checkpoint(path)
    if state.get("format") == 1:
        return "legacy"
    assert tensors["learner.pt"]["w"].tolist() == [float(state["iteration"])] * 3
    return state["iteration"]


def versions(path: Path) -> list[str]:
    return [p.name for p in path.iterdir() if p.name.startswith("v-")]


def assert_one_clean_checkpoint(path: Path) -> None:
    names = sorted(p.name for p in path.iterdir())
    assert len(versions(path)) == 1 and sorted({STATE_FILE, LOCK_FILE, *versions(path)}) == names


# In a fresh process: for k = 1, 2, ... fork a child that saves and SIGKILLs itself just before its
# k-th call of an os function that changes files (or fsyncs), until a save gets through unkilled.
# After each, this process reads the path (it must hold the old or the new checkpoint) and notes
# how many versions lie there. Prints one JSON line per k.
CRASH_AT_EACH_STEP = textwrap.dedent("""
    import json, os, shutil, signal, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[2])
    import torch
    from test_checkpoint_atomic import label, save, versions
    torch.set_num_threads(1)
    path = Path(sys.argv[1])
    STEPS = ("open", "fsync", "replace", "rename", "mkdir", "unlink", "rmdir")

    def dies_before_call(k, fn):
        def call(*args, **kwargs):
            dies_before_call.calls += 1
            if dies_before_call.calls == k:
                os.kill(os.getpid(), signal.SIGKILL)
            return fn(*args, **kwargs)
        return call

    k = 0
    while True:
        k += 1
        before = label(path)
        pid = os.fork()
        if pid == 0:
            dies_before_call.calls = 0
            for name in STEPS:
                setattr(os, name, dies_before_call(k, getattr(os, name)))
            shutil.rmtree = dies_before_call(k, shutil.rmtree)
            save(path, 100 + k)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        killed = os.WIFSIGNALED(status)
        print(json.dumps({"k": k, "killed": killed, "before": before, "after": label(path),
                          "versions": len(versions(path))}), flush=True)
        if not killed:
            break
""")


@pytest.mark.parametrize("start", ["new_layout", "legacy_layout"])
def test_a_save_killed_at_any_step_leaves_the_old_or_the_new_checkpoint(tmp_path, start):
    path = tmp_path / "ckpt"
    if start == "legacy_layout":  # saving over a format-1 checkpoint replaces it just as safely
        shutil.copytree(LEGACY, path)
    else:
        save(path, 1)
    out = subprocess.run([sys.executable, "-c", CRASH_AT_EACH_STEP, str(path), str(ROOT / "tests")],
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                         text=True, timeout=240, check=True)
    runs = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(runs) > 8 and all(run["killed"] for run in runs[:-1]) and not runs[-1]["killed"]
    for run in runs:
        assert run["after"] in (run["before"], 100 + run["k"]), run
        assert run["versions"] <= 2, run  # the current one and at most one a killed save left
    assert any(run["after"] == 100 + run["k"] for run in runs[:-1])  # killed after the switch
    assert runs[-1]["after"] == 100 + runs[-1]["k"]
    assert_one_clean_checkpoint(path)  # the last save removed what the killed ones left


def test_threads_saving_to_one_path_leave_one_complete_checkpoint(tmp_path):
    path = tmp_path / "ckpt"
    save(path, 0)
    start = threading.Barrier(5)
    seen, errors = [], []

    def saver(i: int) -> None:
        start.wait()
        try:
            for j in range(3):
                save(path, 10 * i + j)
        except Exception as e:  # noqa: BLE001  (a failed save must fail the test, not just warn)
            errors.append(repr(e))

    def reader() -> None:  # reads while saves replace and delete versions
        start.wait()
        for _ in range(30):
            try:
                seen.append(label(path))
            except Exception as e:  # noqa: BLE001  (any failure to read is what is tested)
                errors.append(repr(e))

    threads = [threading.Thread(target=saver, args=(i,)) for i in range(1, 5)]
    threads.append(threading.Thread(target=reader))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads)  # no saver or reader hung
    assert errors == [] and len(seen) == 30
    assert label(path) in {10 * i + 2 for i in range(1, 5)}  # some saver's last save
    assert_one_clean_checkpoint(path)


# Several processes wait for one signal, then each saves three times to the same path.
RACE = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, sys.argv[3])
    from pathlib import Path
    from test_checkpoint_atomic import save
    go = Path(sys.argv[2])
    while not go.exists():
        time.sleep(0.005)
    for j in range(3):
        save(Path(sys.argv[1]), 10 * int(sys.argv[4]) + j)
""")


def test_processes_saving_to_one_path_leave_one_complete_checkpoint(tmp_path):
    path, go = tmp_path / "ckpt", tmp_path / "go"
    save(path, 0)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    savers = [subprocess.Popen([sys.executable, "-c", RACE, str(path), str(go), str(ROOT / "tests"),
                                str(i)], env=env) for i in range(1, 5)]
    try:
        go.touch()
        seen = []
        while any(p.poll() is None for p in savers):
            seen.append(label(path))  # never fails, even while versions are replaced
            time.sleep(0.02)
        assert [p.wait(timeout=120) for p in savers] == [0] * 4
    finally:
        for p in savers:
            p.kill()
    assert label(path) in {10 * i + 2 for i in range(1, 5)}
    assert_one_clean_checkpoint(path)


def test_saving_into_an_empty_directory_or_over_leftovers_works(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    save(empty, 1)
    assert label(empty) == 1
    assert_one_clean_checkpoint(empty)
    # What a save killed before its first switch leaves: the lock and a half-written version.
    leftovers = tmp_path / "leftovers"
    leftovers.mkdir()
    (leftovers / LOCK_FILE).touch()
    (leftovers / "v-0123456789abcdef").mkdir()
    (leftovers / "v-0123456789abcdef" / "learner.pt").write_bytes(b"half")
    save(leftovers, 2)
    assert label(leftovers) == 2
    assert_one_clean_checkpoint(leftovers)


def test_a_directory_with_other_files_is_not_overwritten(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me")
    (folder / "v-data").mkdir()  # looks a little like a version, but is not one
    with pytest.raises(CheckpointError, match=r"holds \['notes.txt', 'v-data'\].*new or empty"):
        save(folder, 1)
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt", "v-data"]  # untouched
    file = tmp_path / "file"
    file.write_text("x")
    with pytest.raises(CheckpointError, match="is a file"):
        save(file, 1)
    with pytest.raises(CheckpointError, match="file is a file; pass a directory"):
        save(file / "ckpt", 1)  # (was a raw NotADirectoryError)


def test_an_unwritable_folder_is_named_before_anything_is_written(tmp_path, monkeypatch):
    monkeypatch.setattr(checkpoints.os, "access", lambda path, mode: False)  # (as root could write)
    with pytest.raises(CheckpointError, match=f"{tmp_path} is not writable: save into a directory"):
        checkpoints.check_checkpoint_dir(tmp_path / "new" / "ckpt")
