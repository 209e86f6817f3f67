"""The book's pieces without building it: outputs kept from nbval's messages as JupyterLab shows
them, a lesson made into a page, the landing page, and executed copies refused when out of date.
(The built book is checked in Chromium by tests/browser/test_book_in_browser.py.)"""

import os
import platform
import re
import shutil
import subprocess
import sys

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from rlcourse.course import book
from rlcourse.course.book_outputs import CellOutputs, describe_run, run_record


def message(kind: str, **content) -> dict:
    return {"msg_type": kind, "content": content, "header": {"msg_type": kind}}


def test_outputs_as_jupyterlab_shows_them():
    outputs = CellOutputs()
    outputs.add(message("stream", name="stdout", text="step 1\rstep 2\n"))
    outputs.add(message("stream", name="stdout", text="done\n"))
    outputs.add(message("display_data", data={"text/plain": "starting"}, metadata={},
                        transient={"display_id": "d1"}))
    outputs.add(message("update_display_data", data={"text/plain": "3 trials"}, metadata={},
                        transient={"display_id": "d1"}))
    outputs.add(message("display_data", data={"text/plain": "frame 1"}, metadata={}))
    outputs.add(message("clear_output", wait=True))
    outputs.add(message("display_data", data={"image/png": "iVBO"}, metadata={}))
    kept = outputs.finished()
    assert [o.output_type for o in kept] == ["display_data"]  # cleared before the last one
    assert kept[0].data == {"image/png": "iVBO"} and kept[0].metadata == {}

    outputs = CellOutputs()
    outputs.add(message("stream", name="stdout", text="step 1\rstep 2\n"))
    outputs.add(message("stream", name="stdout", text="done\n"))
    outputs.add(message("display_data", data={"text/plain": "starting"}, metadata={},
                        transient={"display_id": "d1"}))
    outputs.add(message("update_display_data", data={"text/plain": "3 trials"}, metadata={},
                        transient={"display_id": "d1"}))
    stream, display = outputs.finished()
    assert stream.text == "step 2\ndone\n"
    assert display.data == {"text/plain": "3 trials"} and display.metadata == {}


def test_a_page_says_where_its_outputs_came_from_and_folds_each_solution():
    record = run_record()
    assert record["cpus"] >= 1 and "ray" in record["versions"]
    widget = new_output("display_data", data={book.WIDGET: {"model_id": "x"}, "text/plain": "VBox()"})
    notebook = new_notebook(metadata={"rlcourse": {"run": record}}, cells=[
        new_markdown_cell("# Lesson"), new_markdown_cell('Stuck? `show_solution("gae")`.'),
        new_code_cell("dashboard.display()", outputs=[widget])])
    cells = book.book_page(notebook).cells
    assert describe_run(record) in cells[1].source and record["date"] in cells[1].source
    assert cells[3].source.startswith("<details>") and "def " in cells[3].source  # the solution
    assert cells[4].outputs[0].data == {"text/markdown": book.WIDGET_NOTE}


def test_the_landing_page_links_every_lesson_in_the_readme_table():
    page, readme = book.landing_page(), (book.ROOT / "README.md").read_text()
    in_readme = [lesson for lesson in book.lessons() if f"`{lesson.name}`" in readme]
    assert len(in_readme) == len(book.lessons())  # the table lists every lesson
    for lesson in in_readme:
        assert f"(lessons/{lesson.name})" in page
    assert "{toctree}" in page and "lessons/*" in page and "badge_logo" not in page


def test_an_executed_copy_of_other_cells_is_refused(tmp_path):
    lesson = book.lessons()[0]
    assert book.executed_copy(lesson, tmp_path) is None
    run = nbformat.read(lesson, as_version=4)
    run.cells[-1].source += "\n# changed"
    nbformat.write(run, tmp_path / lesson.name)
    with pytest.raises(FileNotFoundError, match="older"):
        book.executed_lesson(lesson, tmp_path)


def _nbval(folder, **env: str) -> subprocess.CompletedProcess:
    """pytest --nbval-lax on the lessons in `folder`, under lessons/conftest.py, as `make test`."""
    shutil.copy(book.ROOT / "lessons" / "conftest.py", folder)
    env = {**os.environ, **env,
           "PYTHONPATH": os.pathsep.join([str(book.ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--nbval-lax",
                           "--rootdir", str(folder), str(folder)], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_nbval_run_keeps_each_passing_lesson_executed(tmp_path):
    """lessons/conftest.py under nbval, as `make test` runs it, on two small lessons: the one whose
    cells pass is written with its outputs (a display updated in place) and its run's record; the
    one with a failing cell is not. Each lesson's peak memory is listed."""
    nbformat.write(new_notebook(cells=[
        new_markdown_cell("# Lesson"),
        new_code_cell("from IPython.display import display\n"
                      "line = display('starting', display_id=True)\n"
                      "print('step 1\\rstep 2')\nline.update('done')"),
        new_code_cell("6 * 7")]), tmp_path / "00_passes.ipynb")
    nbformat.write(new_notebook(cells=[new_code_cell("1 / 0")]), tmp_path / "00_fails.ipynb")
    executed = tmp_path / "executed"
    run = _nbval(tmp_path, RLCOURSE_EXECUTED_DIR=str(executed))
    assert "peak memory per lesson (kernel + Ray; Binder: 2048 MiB)" in run.stdout, run.stdout[-3000:]
    peak = re.search(r"^00_passes\.ipynb: ([\d,]+) MiB$", run.stdout, re.MULTILINE)
    assert peak and float(peak[1].replace(",", "")) > 0, run.stdout[-3000:]  # its kernel was measured
    assert "1 failed, 2 passed" in run.stdout, run.stdout[-3000:]
    assert [p.name for p in executed.iterdir()] == ["00_passes.ipynb"]
    lesson = nbformat.read(executed / "00_passes.ipynb", as_version=4)
    display, stream = lesson.cells[1].outputs
    assert display.data["text/plain"] == "'done'" and stream.text == "step 2\n"
    assert lesson.cells[2].outputs[0].data["text/plain"] == "42"
    assert lesson.cells[2].execution_count == 2
    assert lesson.metadata.rlcourse.run["versions"]["python"] == platform.python_version()


def test_the_nbval_run_fails_a_lesson_over_the_memory_limit(tmp_path):
    nbformat.write(new_notebook(cells=[new_code_cell("import time\ntime.sleep(0.1)")]),
                   tmp_path / "00_big.ipynb")
    executed = tmp_path / "executed"
    run = _nbval(tmp_path, RLCOURSE_EXECUTED_DIR=str(executed), RLCOURSE_LESSON_LIMIT_MIB="1")
    assert "1 failed" in run.stdout, run.stdout[-3000:]
    assert re.search(r"00_big\.ipynb used [\d,]+ MiB at its peak .* more than Binder's 1 MiB",
                     run.stdout), run.stdout[-3000:]
    assert not (executed / "00_big.ipynb").exists()  # not kept for the book
