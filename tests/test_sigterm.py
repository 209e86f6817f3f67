"""SIGTERM (`kill`, `timeout`, a stopping container or kernel) shuts the course's Ray down as Ctrl-C
does: the process exits and every process its Ray started is gone within seconds (`rlcourse serve`
is tested in test_serve.py)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from jupyter_client.manager import start_new_kernel

ROOT = Path(__file__).resolve().parents[1]
GONE_WITHIN_S = 10

pytestmark = pytest.mark.timeout(240)


def wait_for(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, what()
        time.sleep(0.2)


def test_rlcourse_train_exits_on_sigterm_and_leaves_no_process(tmp_path):
    log = tmp_path / "train.log"
    command = [sys.executable, "-m", "rlcourse", "train", "--num-env-runners", "1",
               "--num-envs-per-env-runner", "1", "--max-iterations", "1000",
               "--set", "train_batch_size_per_learner=200", "minibatch_size=100", "num_epochs=1"]
    with log.open("w") as out:  # a file, not a pipe nobody drains
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path,
                                   start_new_session=True,
                                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        wait_for(lambda: "runners on nodes" in log.read_text() or process.poll() is not None, 180,
                 lambda: log.read_text()[-2000:])
        assert process.poll() is None, log.read_text()[-2000:]
        started = psutil.Process(process.pid).children(recursive=True)
        assert started  # Ray's processes and the runner actor
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 128 + signal.SIGTERM, log.read_text()[-2000:]
        assert "SIGTERM received" not in log.read_text()  # Ray's abort handler did not run
        _, alive = psutil.wait_procs(started, timeout=GONE_WITHIN_S)
        assert not alive, [p.name() for p in alive]
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)


def test_a_lesson_kernel_that_started_ray_leaves_no_process_on_sigterm():
    manager, client = start_new_kernel(kernel_name="python3", cwd=str(ROOT),
                                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        reply = client.execute_interactive(
            "from rlcourse.utils.resources import init_ray; init_ray(num_cpus=1)", timeout=120)
        assert reply["content"]["status"] == "ok", reply["content"]
        kernel = manager.provisioner.process
        started = psutil.Process(kernel.pid).children(recursive=True)
        assert any("raylet" in " ".join(p.cmdline()) for p in started)
        kernel.send_signal(signal.SIGTERM)
        # It exits by itself (Ray's own handler would abort it: SIGABRT, returncode -6).
        assert kernel.wait(timeout=GONE_WITHIN_S) >= 0
        _, alive = psutil.wait_procs(started, timeout=GONE_WITHIN_S)
        assert not alive, [p.name() for p in alive]
    finally:
        client.stop_channels()
        if manager.is_alive():
            manager.shutdown_kernel(now=True)
