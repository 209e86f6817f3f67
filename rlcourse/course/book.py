"""The course as a book: the lessons with the outputs of their one run under nbval, the README's lesson
table as the landing page, the glossary and key papers; a static site in _build/html.

    python -m rlcourse.course.book build     # from _build/executed/ (lessons/conftest.py writes it)
    python -m rlcourse.course.book serve     # http://127.0.0.1:8000
    python -m rlcourse.course.book missing   # the lessons to run first: no executed copy, or an old one

Sphinx with MyST-NB and sphinx-book-theme (pinned in the lock; docs/book-notes.md says why not Jupyter
Book 2): every asset ships in the wheels, so nothing is fetched while building or reading.
"""

import argparse
import functools
import http.server
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
from nbformat.v4 import new_markdown_cell

from rlcourse.course.book_outputs import describe_run
from rlcourse.course.exercises.common import solution_source

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "_build"
EXECUTED, SOURCE, HTML = BUILD / "executed", BUILD / "book-src", BUILD / "html"
DOCS = ("glossary.md", "key_papers.md")
WIDGET = "application/vnd.jupyter.widget-view+json"
WIDGET_NOTE = ("*A live widget here when the lesson runs in JupyterLab; the lesson draws its final "
               "state with `.plot()`.*")
SOLUTION = re.compile(r'show_solution\(\\?"(\w+)\\?"\)')
# matplotlib's animation HTML links Font Awesome 4 from a CDN; the theme ships Font Awesome, offline.
REMOTE_STYLESHEET = re.compile(r'<link rel="stylesheet"\s+href="https?://[^"]*"\s*/?>\n?')


def lessons() -> list[Path]:
    return sorted((ROOT / "lessons").glob("[0-9][0-9]_*.ipynb"))


def executed_copy(lesson: Path, executed: Path) -> nbformat.NotebookNode | None:
    """The executed copy of `lesson`, if there is one run from the lesson's present cells."""
    path = executed / lesson.name
    if not path.exists():
        return None
    run, source = nbformat.read(path, as_version=4), nbformat.read(lesson, as_version=4)
    return run if [c.source for c in run.cells] == [c.source for c in source.cells] else None


def executed_lesson(lesson: Path, executed: Path) -> nbformat.NotebookNode:
    run = executed_copy(lesson, executed)
    if run is None:
        raise FileNotFoundError(f"{executed / lesson.name} is missing or was run from an older "
                                f"{lesson.name}: the book shows the outputs of the lessons' run under "
                                f"nbval (`make book` runs the lessons it lacks; `make test` keeps them)")
    return run


def book_page(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The lesson as a page: where its outputs came from under the title, each exercise's solution
    folded under its text, live widgets (no kernel here) shown in their static HTML form or named, and no
    stylesheet fetched from the internet."""
    cells = [notebook.cells[0], new_markdown_cell(
        f"```{{note}}\n{describe_run(notebook.metadata['rlcourse']['run'])}\n```")]
    for cell in notebook.cells[1:]:
        cells.append(cell)
        for output in cell.get("outputs", []):
            if WIDGET in output.get("data", {}):  # a widget with a static form (concept checks) shows it
                output.data = ({"text/html": output.data["text/html"]} if "text/html" in output.data
                               else {"text/markdown": WIDGET_NOTE})
            if "text/html" in output.get("data", {}):
                output.data["text/html"] = REMOTE_STYLESHEET.sub("", output.data["text/html"])
        for name in SOLUTION.findall(cell.source) if cell.cell_type == "markdown" else ():
            cells.append(new_markdown_cell(
                f"<details><summary>A solution of <code>{name}</code></summary>\n\n"
                f"```python\n{solution_source(name).strip()}\n```\n\n</details>"))
    notebook.cells = cells
    return notebook


def landing_page() -> str:
    """README's title and opening, its Binder badge and its Lessons section, lessons as links."""
    readme = (ROOT / "README.md").read_text()
    sections = re.split(r"^(?=## )", readme, flags=re.M)
    opening = sections[0]
    binder = re.search(r"^\[!\[Binder\]\(.*?\)\]\((.*?)\)", readme, flags=re.M).group(1)
    badge = f"[Open the lessons in JupyterLab on Binder]({binder}) (no install)."  # no image to fetch
    lessons_section = next(s for s in sections if s.startswith("## Lessons"))
    lessons_section = re.sub(r"^\| `(\d\d_\w+)\.ipynb` \|", r"| [\1](lessons/\1.ipynb) |",
                             lessons_section, flags=re.M)
    docs = "\n".join(f"docs/{name.removesuffix('.md')}" for name in DOCS
                     if (ROOT / "docs" / name).exists())
    toctree = f"```{{toctree}}\n:hidden:\n:glob:\n\nlessons/*\n{docs}\n```\n"
    return f"{opening}\n{badge}\n\n{lessons_section}\n{toctree}"


def stage(executed: Path = EXECUTED, source: Path = SOURCE) -> int:
    """Write the book's sources into `source`; return the number of pages."""
    shutil.rmtree(source, ignore_errors=True)
    (source / "lessons").mkdir(parents=True)
    (source / "docs").mkdir()
    for lesson in lessons():
        nbformat.write(book_page(executed_lesson(lesson, executed)), source / "lessons" / lesson.name)
    docs = [name for name in DOCS if (ROOT / "docs" / name).exists()]
    for name in docs:
        shutil.copy(ROOT / "docs" / name, source / "docs" / name)
    (source / "index.md").write_text(landing_page())
    return 1 + len(lessons()) + len(docs)


def build(executed: Path = EXECUTED, html: Path = HTML) -> None:
    """Stage the sources and build the site; Sphinx's warnings fail the build."""
    start, pages = time.monotonic(), stage(executed)
    shutil.rmtree(html, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-q", "-W", "--keep-going",
                    "-c", str(ROOT / "book"), str(SOURCE), str(html)], check=True)
    print(f"book: {pages} pages in {html}, built in {time.monotonic() - start:.0f} s")


def serve(html: Path = HTML, port: int = 8000) -> None:
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(html))
    with http.server.ThreadingHTTPServer(("127.0.0.1", port), handler) as server:
        print(f"the book: http://127.0.0.1:{port}/ (Ctrl-C stops)")
        server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("build", "serve", "missing"))
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    if args.command == "missing":
        stale = [lesson for lesson in lessons() if executed_copy(lesson, EXECUTED) is None]
        print(" ".join(str(lesson.relative_to(ROOT)) for lesson in stale))
    else:
        build() if args.command == "build" else serve(port=args.port)


if __name__ == "__main__":
    main()
