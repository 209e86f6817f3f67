"""For nbval (`make test`): each lesson must fit Binder's 2 GiB, its Ray processes included.

nbval runs every lesson in a kernel of its own, started by this pytest process. While a lesson's
cells run, a thread samples the summed PSS of pytest's descendants (the kernel and every process
it starts: Ray's raylet, GCS, agents, workers and actors) every 0.5 s (a sample costs ~2 ms of CPU
per process, so no more often: lessons measure speed-ups); the lesson's last cell fails if the peak
passed 2 GiB, and the peaks are listed at the end of the run. This is the measure of
benchmarks/binder_profile.py, without running the lessons a second time.

The same run is the book's (`make book`): each cell's outputs are kept as nbval receives them, and a
lesson whose every cell passed is written, executed, to _build/executed/ (RLCOURSE_EXECUTED_DIR).
"""

import os
from pathlib import Path

# `make test` runs the lessons beside tests/ on 2 cores, so each has about one: one torch (OpenMP)
# and one NumPy (OpenBLAS) thread in the kernels and the processes they start, as binder/start gives
# a 1-CPU Binder (a second thread spin-waits on every small matrix product on a busy machine).
# Set before the kernels start; a value set beforehand wins.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import nbformat  # noqa: E402
import pytest  # noqa: E402

from rlcourse.course.book_outputs import CellOutputs, run_record  # noqa: E402
from rlcourse.course.process_memory import PeakTreeMemory  # noqa: E402

EXECUTED = Path(os.environ.get("RLCOURSE_EXECUTED_DIR",
                               Path(__file__).resolve().parents[1] / "_build" / "executed"))

LIMIT_MIB = int(os.environ.get("RLCOURSE_LESSON_LIMIT_MIB", 2048))  # Binder's; a test lowers it

FIRST_CELLS: set[str] = set()
LAST_CELLS: dict[str, str] = {}  # node id of a lesson's last cell -> the lesson's file name
PEAKS: dict[str, float] = {}
FAILED: set[str] = set()  # lessons with a failed cell: not written for the book
_monitor: PeakTreeMemory | None = None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    lessons: dict[pytest.Collector, list[pytest.Item]] = {}
    for item in items:
        lessons.setdefault(item.parent, []).append(item)
    for lesson, cells in lessons.items():
        FIRST_CELLS.add(cells[0].nodeid)
        LAST_CELLS[cells[-1].nodeid] = lesson.name


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """Start sampling at a lesson's first cell (its kernel is up); keep each cell's outputs; at the
    last cell, check the peak and write the executed lesson if every cell passed within the limit."""
    global _monitor
    if item.nodeid in FIRST_CELLS:
        _monitor = PeakTreeMemory(os.getpid(), include_root=False, interval_s=0.5)
        _monitor.start()
    outputs = record_outputs(item)
    try:
        return (yield)
    except Exception:
        FAILED.add(item.parent.name)
        raise
    finally:
        if outputs is not None:
            item.cell.outputs = outputs.finished()
        if item.nodeid in LAST_CELLS:
            lesson, peak = LAST_CELLS[item.nodeid], None
            if _monitor is not None:
                peak, _monitor = _monitor.stop(), None
                PEAKS[lesson] = peak
                if peak > LIMIT_MIB:
                    FAILED.add(lesson)
            save_executed(item.parent)
            assert peak is None or peak <= LIMIT_MIB, (
                f"{lesson} used {peak:,.0f} MiB at its peak (kernel and Ray processes): more than "
                f"Binder's {LIMIT_MIB:,} MiB")


def record_outputs(item: pytest.Item) -> CellOutputs | None:
    """Collect the cell's outputs from the iopub messages nbval reads (nbval's items only)."""
    lesson = item.parent
    if not hasattr(item, "cell") or getattr(lesson, "kernel", None) is None:
        return None
    # The class's methods, not the instance's: each cell replaces the previous cell's wrappers.
    execute = type(lesson.kernel).execute_cell_input.__get__(lesson.kernel)
    read, outputs = type(lesson).get_kernel_message.__get__(lesson), CellOutputs()
    request: dict[str, str] = {}

    def execute_cell_input(source: str, **kwargs) -> str:
        request["id"] = execute(source, **kwargs)
        return request["id"]

    def get_kernel_message(**kwargs) -> dict:
        msg = read(**kwargs)
        if msg["parent_header"].get("msg_id") == request.get("id"):
            outputs.add(msg)
        return msg

    lesson.kernel.execute_cell_input, lesson.get_kernel_message = execute_cell_input, get_kernel_message
    return outputs


def save_executed(lesson: pytest.Collector) -> None:
    """Write the executed lesson for the book, or remove a stale one if a cell failed."""
    path = EXECUTED / lesson.name
    path.unlink(missing_ok=True)
    if lesson.name not in FAILED:
        EXECUTED.mkdir(parents=True, exist_ok=True)
        code = (cell for cell in lesson.nb.cells if cell.cell_type == "code")
        for count, cell in enumerate(code, 1):  # nbval runs cells without history: In [1], [2], ...
            cell.execution_count = count
            for output in cell.outputs:
                if output.output_type == "execute_result":
                    output.execution_count = count
        lesson.nb.metadata["rlcourse"] = {"run": run_record()}
        nbformat.write(lesson.nb, path)


def pytest_terminal_summary(terminalreporter) -> None:
    if PEAKS:
        terminalreporter.section(f"peak memory per lesson (kernel + Ray; Binder: {LIMIT_MIB} MiB)")
        for lesson, peak in PEAKS.items():
            terminalreporter.write_line(f"{lesson}: {peak:,.0f} MiB")
