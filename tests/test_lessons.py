"""Every lesson matches its generator and has the parts each lesson promises (nbval runs them)."""

import importlib.util
import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
GENERATORS = sorted((ROOT / "tools").glob("make_lesson_*.py"))
sys.path.insert(0, str(ROOT / "tools"))


def load_generator(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def lessons() -> list[tuple[str, nbformat.NotebookNode]]:
    return [(path.name, nbformat.read(path, as_version=4))
            for path in sorted((ROOT / "lessons").glob("[0-9][0-9]_*.ipynb"))]


def test_every_lesson_has_a_generator_and_matches_it():
    from lesson_cells import build_notebook

    generated = {}
    for path in GENERATORS:
        module = load_generator(path)
        generated[module.NAME] = build_notebook(module.CELLS)
    assert sorted(generated) == [name for name, _ in lessons()]
    for name, notebook in lessons():
        expected = [(c.cell_type, c.source) for c in generated[name].cells]
        actual = [(c.cell_type, c.source) for c in notebook.cells]
        assert actual == expected, f"{name} differs from its generator: run tools/make_lesson_*.py"


@pytest.mark.parametrize(("name", "notebook"), lessons(), ids=[name for name, _ in lessons()])
def test_lesson_structure(name, notebook):
    cells = notebook.cells
    text = "\n".join(c.source for c in cells)
    assert all(not c.get("outputs") and c.get("execution_count") is None
               for c in cells if c.cell_type == "code"), f"{name}: outputs must be stripped"
    assert cells[0].cell_type == "markdown" and "By the end of this lesson" in cells[0].source
    assert "minutes of study" in cells[0].source, f"{name}: the header gives the study time"
    assert "docs/glossary.md" in cells[0].source, f"{name}: the header links the glossary"
    assert (ROOT / "docs" / "glossary.md").is_file()
    assert "Read next in the source" in text, f"{name}: end with what to read in the source"
    assert re.search(r"exercises\.check_\w+\(|\bcheck_\w+\(", text), f"{name}: needs an exercise"
    last = cells[-1]
    assert last.cell_type == "code" and "assert " in last.source, f"{name}: end with a check cell"
    for source_path in set(re.findall(r"rlcourse/[\w/]+\.py", text)):
        assert (ROOT / source_path).is_file(), f"{name} points learners to {source_path}"


def test_readme_lists_every_lesson():
    readme = (ROOT / "README.md").read_text()
    for name, _ in lessons():
        assert name in readme, f"README.md does not describe {name}"


SOURCE_PATH = re.compile(r"rlcourse/[\w/]*\.py")


def test_every_source_path_named_in_a_lesson_or_the_readme_exists():
    """'Read next: rlcourse/env/env_runner.py' must lead a learner to a file that is there."""
    texts = {name: "\n".join(cell.source for cell in notebook.cells) for name, notebook in lessons()}
    for doc in ("README.md", "deploy/README.md", *(str(p.relative_to(ROOT)) for p in
                                                   (ROOT / "docs").glob("*.md"))):
        texts[doc] = (ROOT / doc).read_text()
    named = {(doc, path) for doc, text in texts.items() for path in SOURCE_PATH.findall(text)}
    assert len({path for _, path in named}) >= 15  # the concept table alone names more
    missing = sorted((doc, path) for doc, path in named if not (ROOT / path).is_file())
    assert not missing, f"paths that lead nowhere: {missing}"
