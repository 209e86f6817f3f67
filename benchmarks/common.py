"""Small helpers shared by the benchmark scripts: timing, medians, memory, Ray, and printed tables.

The scripts import this module as `common` (Python puts a script's own folder on `sys.path`), so run
them as scripts: `python benchmarks/<name>.py`. Nothing here imports torch or Ray at import time:
some benchmarks measure exactly what those imports cost.
"""

import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import psutil

T = TypeVar("T")

MB = 1024 * 1024
TUNED_EXAMPLES = Path(__file__).resolve().parents[1] / "tuned_examples"


def course_cartpole_config(algo: str = "ppo") -> Any:
    """The course's CartPole config for "ppo" or "impala" (tuned_examples/<algo>/cartpole_<algo>.py,
    2 runners of 4 sub-envs): PPOConfig's and IMPALAConfig's own defaults are RLlib's, sized for
    big runs and much slower on CartPole. Each call loads the file anew, so callers may change the
    config (the layout and seed they measure) without affecting the next call."""
    from rlcourse.course.tuned_example import load_tuned_example

    return load_tuned_example(TUNED_EXAMPLES / algo / f"cartpole_{algo}.py").config


def timed(fn: Callable[[], T]) -> tuple[T, float]:
    """Call `fn()` once; return its result and the wall time it took, in seconds."""
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def uss_mb(pid: int) -> float:
    """Private memory of a process (USS: pages no other process shares), in MB.

    USS is what the machine gets back when the process exits, so it is the honest cost of one more
    actor: the shared pages of libraries mapped by many processes are not counted again.
    """
    return psutil.Process(pid).memory_full_info().uss / MB


@contextmanager
def ray_session(num_cpus: int = 2) -> Iterator[float]:
    """Start Ray small (no dashboard) as the course does, yield how long `ray.init` took, shut down."""
    import ray

    from rlcourse.utils.resources import init_ray

    _, seconds = timed(lambda: init_ray(num_cpus=num_cpus))
    try:
        yield seconds
    finally:
        ray.shutdown()


def goal(met: bool) -> str:
    return "met" if met else "MISSED"


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """Print a Markdown table (readable in a terminal, renders in a notebook or on GitHub).

    The first column is left-aligned (labels), the others right-aligned (numbers).
    """
    cells = [[str(cell) for cell in row] for row in rows]
    widths = [max(len(header), *(len(row[i]) for row in cells)) for i, header in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        padded = [v.ljust(w) if i == 0 else v.rjust(w)
                  for i, (v, w) in enumerate(zip(values, widths, strict=True))]
        return "| " + " | ".join(padded) + " |"

    print(f"\n{title}\n")
    print(line(headers))
    print("|" + "|".join(":" + "-" * (w + 1) if i == 0 else "-" * (w + 1) + ":"
                         for i, w in enumerate(widths)) + "|")
    for row in cells:
        print(line(row))
    print()
