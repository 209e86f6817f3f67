"""Shared by the lesson generators (tools/make_lesson_NN.py): cell helpers and writing a notebook.

Each lesson is written as a Python list of cells in its generator, so that it can be read, diffed and
reviewed like code; `python tools/make_lesson_NN.py` writes the notebook with outputs stripped and
stable cell ids. tests/test_lessons.py checks that every notebook matches its generator.
"""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

LESSONS = Path(__file__).resolve().parents[1] / "lessons"


def md(source: str) -> nbformat.NotebookNode:
    return new_markdown_cell(source.strip("\n"))


def code(source: str) -> nbformat.NotebookNode:
    return new_code_cell(source.strip("\n"))


def build_notebook(cells: list) -> nbformat.NotebookNode:
    """A notebook of `cells` with ids cell-0, cell-1, ... (stable across regenerations)."""
    for i, cell in enumerate(cells):
        cell["id"] = f"cell-{i}"
    return new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"}})


def write_lesson(name: str, cells: list) -> Path:
    """Write lessons/<name> and return its path."""
    path = LESSONS / name
    nbformat.write(build_notebook(cells), path)
    return path


def concept_checks_cell(lesson: str) -> nbformat.NotebookNode:
    """The cell that shows lesson `lesson`'s concept checks (rlcourse/course/concept_checks.py)."""
    return code(f"""
# Concept checks: pick an answer and the widget says right or wrong, and why (nothing waits for you).
from rlcourse.course.concept_checks import concept_checks

concept_checks("{lesson}")
""")
