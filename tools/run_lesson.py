"""Run a lesson as a learner does, top to bottom, then again in the same kernel; report time and memory.

    python tools/run_lesson.py lessons/01_ray_and_rl_basics.ipynb [--runs 2]

Each run executes every cell in one kernel (the second run re-uses it, as a learner who presses
"Run All" twice does). Memory is the peak, sampled every 0.2 s, of the summed proportional set size
(PSS: private pages, plus shared ones divided among the processes sharing them) of the kernel and
every process it starts, Ray's included: what the tree costs a machine. Exits 1 if any cell fails.
"""

import argparse
import contextlib
import sys
import threading
import time
from pathlib import Path

import nbformat
import psutil
from nbclient import NotebookClient

MB = 1024 * 1024


class PeakMemory(threading.Thread):
    """Samples the summed PSS of a process and all its descendants until stopped."""

    def __init__(self, pid: int, interval_s: float = 0.2):
        super().__init__(daemon=True)
        self.pid, self.interval_s, self.peak_mb = pid, interval_s, 0.0
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            try:
                root = psutil.Process(self.pid)
                processes = [root, *root.children(recursive=True)]
            except psutil.NoSuchProcess:
                return
            total = 0.0
            for process in processes:
                with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):  # it ended
                    total += process.memory_full_info().pss / MB
            self.peak_mb = max(self.peak_mb, total)
            self._stop_event.wait(self.interval_s)

    def stop(self) -> float:
        self._stop_event.set()
        self.join()
        return self.peak_mb


def run_lesson(path: Path, runs: int = 2, timeout_s: int = 600) -> list[tuple[float, float]]:
    """Execute the notebook `runs` times in one kernel; return (seconds, peak MB) per run."""
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(notebook, timeout=timeout_s, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    figures = []
    with client.setup_kernel():
        kernel_pid = client.km.provisioner.process.pid
        for _ in range(runs):
            monitor = PeakMemory(kernel_pid)
            monitor.start()
            start = time.perf_counter()
            try:
                for index, cell in enumerate(notebook.cells):
                    client.execute_cell(cell, index)
            finally:
                figures.append((time.perf_counter() - start, monitor.stop()))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    failed = False
    for path in args.notebooks:
        try:
            for run, (seconds, peak_mb) in enumerate(run_lesson(path, args.runs), 1):
                print(f"{path.name}: run {run}: {seconds:.1f} s, peak memory {peak_mb:.0f} MB")
        except Exception as e:  # report and go on with the next lesson
            failed = True
            print(f"{path.name}: FAILED: {type(e).__name__}: {str(e)[-2000:]}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
