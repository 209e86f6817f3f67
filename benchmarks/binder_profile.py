"""Every lesson as Binder runs it: one CPU core, a 64 MB /dev/shm, binder/start's environment.

    python benchmarks/binder_profile.py [lessons/NN_*.ipynb ...] [--output docs/binder-profile.md]

Binder gives a learner 1 CPU and 2 GiB in a Docker container whose /dev/shm has Docker's default
64 MB. Each lesson (default: every lessons/[0-9][0-9]_*.ipynb) runs once, top to bottom, in a fresh
kernel (as tools/run_lesson.py runs it), on a copy of lessons/ in a temp dir and with its own Ray
temp dir. The kernel is started as

    unshare --mount sh -c 'mount a 64 MB tmpfs on /dev/shm; exec "$@"' \\
        taskset -c 0 binder/start python -m ipykernel_launcher ...

so the kernel and every process it starts, Ray's included, share one core and see the small
/dev/shm (unshare needs root; without it the host's /dev/shm is used, and the doc says so). Memory
is the peak of the summed PSS of the kernel's whole process tree, sampled every 0.2 s (run_lesson's
measure), with what made it up at that moment: the kernel, Ray's actors, its idle workers and its
own processes. The table goes to docs/binder-profile.md and is printed.
"""

import argparse
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import nbformat
import psutil
from common import print_table
from nbclient import NotebookClient

from rlcourse.course.process_memory import PeakTreeMemory

ROOT = Path(__file__).resolve().parents[1]

BINDER_MEMORY_MIB = 2048
SHM_MB = 64
CPU = 0
PROBE = ("import json, os, shutil; print(json.dumps({'shm_mib': shutil.disk_usage('/dev/shm').total "
         "// 2**20, 'cpus': sorted(os.sched_getaffinity(0)), "
         "'omp_num_threads': os.environ.get('OMP_NUM_THREADS', 'unset')}))")


def kernel_prefix(small_shm: bool) -> list[str]:
    """The command that the kernel's Python runs under: a small /dev/shm, one core, binder/start."""
    shm = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
           f'mount -t tmpfs -o size={SHM_MB}m tmpfs /dev/shm && exec "$@"', "sh"]
    return [*(shm if small_shm else []), "taskset", "-c", str(CPU), str(ROOT / "binder" / "start")]


def probe(prefix: list[str]) -> dict | None:
    """What a process started under `prefix` sees: /dev/shm's size, its CPUs, OMP_NUM_THREADS."""
    result = subprocess.run([*prefix, sys.executable, "-c", PROBE], capture_output=True, text=True,
                            timeout=60, check=False)
    return json.loads(result.stdout) if result.returncode == 0 else None


def install_kernel(jupyter_path: Path, prefix: list[str]) -> None:
    """A `python3` kernelspec that starts the kernel under `prefix`; JUPYTER_PATH puts it first."""
    spec = jupyter_path / "kernels" / "python3"
    spec.mkdir(parents=True)
    argv = [*prefix, sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps(
        {"argv": argv, "display_name": "Python 3 (Binder profile)", "language": "python"}))
    os.environ["JUPYTER_PATH"] = str(jupyter_path)


RAY_SYSTEM = ("raylet/raylet", "gcs/gcs_server", "ray/dashboard/", "ray-dashboard-", "ray.dashboard",
              "log_monitor.py", "runtime_env/agent/main.py", "autoscaler/_private/monitor.py",
              "bin/ray start", "rlcourse.course.ray_cli start")


def part_of(process: psutil.Process) -> str:
    """Which part of the lesson a process is. Ray names its workers "ray::<actor class>" (or
    "ray::IDLE"); its own processes are known by their programs."""
    if process.ppid() == os.getpid():
        return "kernel"
    command = " ".join(process.cmdline())
    if command.startswith(("ray::IDLE", "ray::DashboardAgent", "ray::RuntimeEnvAgent")):
        return "idle Ray workers" if command.startswith("ray::IDLE") else "Ray system"
    if command.startswith("ray::"):
        return "Ray actors"
    if any(name in command for name in RAY_SYSTEM):
        return "Ray system"
    return "idle Ray workers" if "workers/default_worker.py" in command else "other"  # starting


def breakdown(memory: PeakTreeMemory) -> str:
    """The parts of the peak, largest first: "kernel 410 · 9 Ray actors 620 · ..." (MiB)."""
    parts = []
    for part, mib in memory.parts.most_common():
        label = part if part == "kernel" else f"{memory.counts[part]} {part}"
        parts.append(f"{label} {mib:,.0f}")
    return " · ".join(parts)


def run_once(path: Path, timeout_s: int = 600) -> tuple[float, PeakTreeMemory, str]:
    """Run the notebook top to bottom in a fresh kernel: (seconds, its memory, error or "")."""
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(notebook, timeout=timeout_s, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    memory, error = PeakTreeMemory(os.getpid(), include_root=False, part_of=part_of), ""
    with client.setup_kernel():
        memory.start()
        start = time.perf_counter()
        try:
            for index, cell in enumerate(notebook.cells):
                client.execute_cell(cell, index)
        except Exception as e:  # reported in the table; the next lesson still runs
            error = f"{type(e).__name__}: {str(e)[-1500:]}"
        finally:
            seconds = time.perf_counter() - start
            memory.stop()
    return seconds, memory, error


def profile(lessons: list[Path], work_dir: Path) -> list[list[object]]:
    """Run each lesson once under the Binder kernel; one table row per lesson."""
    copies = work_dir / "lessons"
    copies.mkdir()
    os.environ["RAY_TMPDIR"] = str(work_dir / "ray")  # never join another Ray on this machine
    (work_dir / "ray").mkdir()
    rows = []
    for lesson in lessons:
        load = os.getloadavg()[0]
        seconds, memory, error = run_once(Path(shutil.copy(lesson, copies)))
        if error:
            print(f"{lesson.name}: FAILED: {error}", flush=True)
        fits = "FAILED" if error else "yes" if memory.peak_mib <= BINDER_MEMORY_MIB else "NO"
        rows.append([lesson.name, f"{seconds:.0f}", f"{memory.peak_mib:,.0f}", fits,
                     breakdown(memory), f"{load:.1f}"])
        print(" | ".join(map(str, rows[-1])), flush=True)
    return rows


def report(rows: list[list[object]], seen: dict, small_shm: bool) -> str:
    """The Markdown document: how the lessons were run, and the table."""
    table = io.StringIO()
    with contextlib.redirect_stdout(table):
        print_table("", ["lesson", "time (s)", "peak memory (MiB)", "within 2 GiB",
                         "at the peak (MiB)", "load avg at start"], rows)
    shm = (f"a {seen['shm_mib']} MiB /dev/shm of its own (Docker's default, as on Binder: Ray's "
           "object store falls back to /tmp)" if small_shm else
           f"the host's /dev/shm ({seen['shm_mib']} MiB; `unshare` needs root)")
    cpus, threads = ", ".join(map(str, seen["cpus"])), seen["omp_num_threads"]
    return f"""# Binder profile: every lesson on one core, against Binder's 2 GiB

Written by `make binder-profile` (benchmarks/binder_profile.py) on {datetime.now(UTC):%Y-%m-%d %H:%M}
UTC; run it again rather than editing this file.

**How.** Each lesson ran once, top to bottom, in a fresh kernel (as tools/run_lesson.py runs it)
started through binder/start on CPU {cpus} only (`taskset`), with {shm}; OMP_NUM_THREADS was
{threads}. The kernel and every process it starts, Ray's included, shared that core.

**Memory** is the peak, sampled every 0.2 s, of the summed PSS (proportional set size: private
pages, plus shared pages divided among the processes sharing them) of the kernel's whole process
tree: what the lesson costs the container. "At the peak" splits that sample into the kernel, Ray's
actors (runners, learners, a lesson's own), its idle workers, its own processes (raylet, GCS,
agents, log monitor, dashboard; with `ray start` nodes, each node's), and other processes a lesson
starts (such as a Ray Job's driver). JupyterLab's server runs outside the tree and is not included.

**Time** is wall time. The machine has {os.cpu_count()} cores and other jobs may have run on it (the
load average at each lesson's start is in the table): times are upper bounds, and PSS may be a
little low where such jobs map the same libraries.

{table.getvalue().strip()}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lessons", nargs="*", type=Path,
                        default=sorted((ROOT / "lessons").glob("[0-9][0-9]_*.ipynb")))
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "binder-profile.md")
    args = parser.parse_args()
    small_shm = os.geteuid() == 0 and shutil.which("unshare") is not None
    prefix = kernel_prefix(small_shm)
    seen = probe(prefix)
    if seen is None and small_shm:  # no mount namespaces here (e.g. a container without the right)
        small_shm, prefix = False, kernel_prefix(False)
        seen = probe(prefix)
    if seen is None:
        sys.exit(f"cannot start a process under {prefix}")
    print(f"kernel: {' '.join(prefix)} python -m ipykernel_launcher; it sees {seen}")
    with tempfile.TemporaryDirectory(prefix="binder-profile-") as work_dir:
        install_kernel(Path(work_dir) / "jupyter", prefix)
        rows = profile(args.lessons, Path(work_dir))
    document = report(rows, seen, small_shm)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(document)
    print(f"\n{document}\nwritten to {args.output}")
    sys.exit(1 if any(row[3] != "yes" for row in rows) else 0)


if __name__ == "__main__":
    main()
