"""`rlcourse doctor`: a workshop pre-flight check of this machine, saying what to fix.

Checks Python and every package against requirements.lock, that torch's build (CPU or CUDA) suits
the machine, the CPUs and memory this process may use (container limits included, as on Binder),
/dev/shm (Ray's object store), that Ray starts and an actor answers, and that JupyterLab's widget
extension is installed (the dashboards need it).
Run it from a terminal (`rlcourse doctor`) or a notebook cell (`from rlcourse.course.doctor import
doctor; doctor()`).
"""

import os
import platform
import shutil
import sys
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import psutil

LOCK = Path(__file__).resolve().parents[2] / "requirements.lock"  # the repository root's
MIN_CPUS, MIN_MEMORY_GB, MIN_SHM_MB = 1, 2.0, 256
WIDGET_EXTENSION = Path("share", "jupyter", "labextensions", "@jupyter-widgets", "jupyterlab-manager")


@dataclass
class Check:
    """One line of the report: what was checked, OK / WARN / FAIL, what was found, how to fix it."""

    name: str
    status: str
    found: str
    fix: str = ""


def _canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def check_python() -> Check:
    version = platform.python_version()
    ok = sys.version_info[:2] == (3, 11)
    return Check("Python", "OK" if ok else "FAIL", version,
                 "" if ok else "The course is pinned for Python 3.11: run `make lab`, which builds "
                               ".venv with python3.11, or `conda env create -f environment.yml`.")


def check_packages(lock: Path = LOCK) -> Check:
    if not lock.is_file():
        return Check("Packages", "WARN", f"no {lock.name} at {lock.parent}",
                     "Install the course from its repository to check the exact pins.")
    wrong = []
    for line in lock.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" not in line:
            continue
        name, pinned = (part.strip() for part in line.split("=="))
        try:
            installed = metadata.version(name).split("+")[0]
        except metadata.PackageNotFoundError:
            installed = "missing"
        if installed != pinned:
            wrong.append(f"{_canonical(name)} {installed} (lock: {pinned})")
    if not wrong:
        return Check("Packages", "OK", f"all pins of {lock.name} installed")
    return Check("Packages", "FAIL", "; ".join(wrong[:5]) + (" ..." if len(wrong) > 5 else ""),
                 "Run `make lab` (or `pip install -r requirements.lock`) in the course's folder.")


def torch_is_cuda_build() -> bool:
    """Whether the installed torch is a CUDA build: those require their nvidia-* packages."""
    return any(r.startswith("nvidia-") for r in metadata.requires("torch") or [])


def has_nvidia_gpu() -> bool:
    """Whether an NVIDIA driver sees a GPU here (no torch import needed)."""
    return Path("/proc/driver/nvidia/gpus").is_dir() or shutil.which("nvidia-smi") is not None


def check_torch_build() -> Check:
    version, cuda, gpu = metadata.version("torch"), torch_is_cuda_build(), has_nvidia_gpu()
    build = f"torch {version}, {'CUDA' if cuda else 'CPU'} build"
    if cuda == gpu:
        return Check("torch", "OK", build + (", NVIDIA GPU found" if gpu else ", no GPU here"))
    if cuda:
        return Check("torch", "WARN", build + " (several GB of nvidia packages) and no GPU here",
                     "Reinstall the CPU build: `rm -rf .venv && make install` (TORCH_INDEX "
                     "defaults to PyTorch's CPU index).")
    return Check("torch", "WARN", build + ", but an NVIDIA GPU is here: learners cannot use it",
                 "Install a CUDA build: `rm -rf .venv && make install "
                 "TORCH_INDEX=https://download.pytorch.org/whl/cu128`.")


def usable_cpus() -> float:
    """CPUs this process may use: its affinity, and a container's CPU quota if lower."""
    cpus = float(len(os.sched_getaffinity(0)))
    quota = Path("/sys/fs/cgroup/cpu.max")
    if quota.is_file():
        limit, period = quota.read_text().split()[:2]
        if limit != "max":
            cpus = min(cpus, int(limit) / int(period))
    return cpus


def check_cpus() -> Check:
    cpus = usable_cpus()
    status = "OK" if cpus >= 2 else "WARN" if cpus >= MIN_CPUS else "FAIL"
    return Check("CPUs", status, f"{cpus:g} usable",
                 "" if status == "OK" else "With one CPU the lessons run, more slowly; ask for 2.")


def usable_memory_gb() -> float:
    """Memory this process may use: the machine's, or a container's limit if lower."""
    memory = psutil.virtual_memory().total
    limit = Path("/sys/fs/cgroup/memory.max")
    if limit.is_file() and limit.read_text().strip() != "max":
        memory = min(memory, int(limit.read_text()))
    return memory / 1024**3


def check_memory() -> Check:
    gb = usable_memory_gb()
    ok = gb >= MIN_MEMORY_GB - 0.05
    return Check("Memory", "OK" if ok else "FAIL", f"{gb:.1f} GiB",
                 "" if ok else f"The course needs about {MIN_MEMORY_GB:g} GiB; close other programs.")


def check_shm() -> Check:
    shm = Path("/dev/shm")
    if not shm.exists():
        return Check("/dev/shm", "WARN", "missing", "Ray will keep its object store in /tmp (slower).")
    free_mb = shutil.disk_usage(shm).free / 1024**2
    ok = free_mb >= MIN_SHM_MB
    return Check("/dev/shm", "OK" if ok else "WARN", f"{free_mb:.0f} MB free",
                 "" if ok else "Ray's object store will fall back to /tmp (slower). In Docker, "
                               "start the container with --shm-size=1g.")


SLOW_RAY_S = 30  # a start slower than this is a warning: the lessons run, more slowly


def _is_timeout(error: Exception) -> bool:
    from ray.exceptions import GetTimeoutError

    return isinstance(error, GetTimeoutError | TimeoutError) or "timed out" in str(error).lower()


def check_ray() -> Check:
    """Start Ray (or use the running one), start an actor, and time its answer. A start that is
    merely slow (a busy machine) is a warning with advice, not a failure."""
    import ray

    from rlcourse.utils.resources import init_ray

    started_here = not ray.is_initialized()
    start = time.perf_counter()
    slow_fix = ("The machine is busy (or has one CPU): the lessons will run, more slowly. Close "
                "other programs, or run this check again once the machine is quieter.")
    try:
        if started_here:
            init_ray(num_cpus=1)

        @ray.remote(num_cpus=0)
        class Echo:
            def echo(self, x: int) -> int:
                return x

        actor = Echo.remote()
        answer = ray.get(actor.echo.remote(42), timeout=120)
        ray.kill(actor)
    except Exception as e:
        if _is_timeout(e):
            return Check("Ray", "WARN", f"Ray was too slow to start an actor: "
                                        f"{type(e).__name__}: {e}", slow_fix)
        return Check("Ray", "FAIL", f"{type(e).__name__}: {e}",
                     "Look at the error above; `ray.shutdown()` and retry, or restart the kernel.")
    finally:
        if started_here and ray.is_initialized():
            ray.shutdown()
    elapsed = time.perf_counter() - start
    found = f"Ray {ray.__version__} started and an actor answered in {elapsed:.1f} s"
    if answer != 42:
        return Check("Ray", "FAIL", found, "The actor answered wrongly.")
    return Check("Ray", "WARN", found, slow_fix) if elapsed > SLOW_RAY_S else Check("Ray", "OK", found)


def check_widgets() -> Check:
    try:
        import ipywidgets
    except ImportError:
        return Check("Widgets", "FAIL", "ipywidgets missing", "Install the lock (`make lab`).")
    installed = any((Path(prefix) / WIDGET_EXTENSION).is_dir()
                    for prefix in {sys.prefix, sys.base_prefix})
    return Check("Widgets", "OK" if installed else "FAIL",
                 f"ipywidgets {ipywidgets.__version__}, JupyterLab extension "
                 + ("installed" if installed else "missing"),
                 "" if installed else "Install jupyterlab_widgets from the lock, then reload "
                                      "JupyterLab; without it the dashboards show as text.")


CHECKS = (check_python, check_packages, check_torch_build, check_cpus, check_memory, check_shm,
          check_ray, check_widgets)


def doctor() -> list[Check]:
    """Run every check, print the report, and return the checks."""
    checks = [check() for check in CHECKS]
    width = max(len(c.name) for c in checks)
    for c in checks:
        print(f"{c.status:4}  {c.name:{width}}  {c.found}")
        if c.fix:
            print(f"{'':4}  {'':{width}}  -> {c.fix}")
    failed = [c.name for c in checks if c.status == "FAIL"]
    print("Ready for the course." if not failed else f"Fix before the workshop: {', '.join(failed)}.")
    return checks


def main(argv: list[str]) -> int:
    """`rlcourse doctor`: exit code 1 if any check failed."""
    return 1 if any(c.status == "FAIL" for c in doctor()) else 0
