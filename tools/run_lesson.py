"""Run a lesson as a learner does, top to bottom, then again in the same kernel; report time and memory.

    python tools/run_lesson.py lessons/01_ray_and_rl_basics.ipynb [--runs 2]

Each run executes every cell in one kernel (the second run re-uses it, as a learner who presses
"Run All" twice does). Memory is the peak, sampled every 0.2 s, of the summed proportional set size
(PSS: private pages, plus shared ones divided among the processes sharing them) of the kernel and
every process it starts, Ray's included: what the tree costs a machine. Exits 1 if any cell fails.
"""

import argparse
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from rlcourse.course.process_memory import PeakTreeMemory


def run_lesson(path: Path, runs: int = 2, timeout_s: int = 600) -> list[tuple[float, float]]:
    """Execute the notebook `runs` times in one kernel; return (seconds, peak MiB) per run."""
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(notebook, timeout=timeout_s, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    figures = []
    with client.setup_kernel():
        kernel_pid = client.km.provisioner.process.pid
        for _ in range(runs):
            monitor = PeakTreeMemory(kernel_pid)
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
            for run, (seconds, peak_mib) in enumerate(run_lesson(path, args.runs), 1):
                print(f"{path.name}: run {run}: {seconds:.1f} s, peak memory {peak_mib:.0f} MiB")
        except Exception as e:  # report and go on with the next lesson
            failed = True
            print(f"{path.name}: FAILED: {type(e).__name__}: {str(e)[-2000:]}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
