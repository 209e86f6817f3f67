"""Every lesson matches its source and has the parts each lesson promises (nbval runs them)."""

import importlib
import inspect
import pkgutil
import re
import tomllib
from pathlib import Path

import jupytext
import nbformat
import pytest

import rlcourse

ROOT = Path(__file__).resolve().parents[1]
SYNC = "run `make lessons-sync` (jupytext --sync, then outputs cleared)"


def lessons() -> list[tuple[str, nbformat.NotebookNode]]:
    return [(path.name, nbformat.read(path, as_version=4))
            for path in sorted((ROOT / "lessons").glob("[0-9][0-9]_*.ipynb"))]


def test_every_lesson_notebook_holds_the_cells_of_its_myst_source():
    """lessons/source/NN_name.md (jupytext's MyST Markdown) is the lesson's one source; the committed
    notebook, paired with it by lessons/jupytext.toml, must hold the same cells, metadata included."""
    config = tomllib.loads((ROOT / "lessons" / "jupytext.toml").read_text())
    assert config["formats"] == "ipynb,source//md:myst"
    sources = sorted((ROOT / "lessons" / "source").glob("[0-9][0-9]_*.md"))
    assert [p.stem for p in sources] == [name.removesuffix(".ipynb") for name, _ in lessons()]
    for (name, notebook), source in zip(lessons(), sources, strict=True):
        text = jupytext.read(source)
        assert text.metadata["jupytext"]["text_representation"]["format_name"] == "myst", source.name
        expected = [(c.cell_type, c.source, c.metadata) for c in text.cells]
        actual = [(c.cell_type, c.source, c.metadata) for c in notebook.cells]
        assert actual == expected and notebook.metadata.kernelspec == text.metadata.kernelspec, (
            f"lessons/{name} differs from its source lessons/source/{source.name}: {SYNC}")


@pytest.mark.parametrize(("name", "notebook"), lessons(), ids=[name for name, _ in lessons()])
def test_lesson_structure(name, notebook):
    cells = notebook.cells
    text = "\n".join(c.source for c in cells)
    assert all(not c.get("outputs") and c.get("execution_count") is None
               for c in cells if c.cell_type == "code"), f"{name}: outputs must be stripped: {SYNC}"
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


CLASS_ATTRIBUTE = re.compile(r"`([A-Z]\w+)\.(\w+)")


def _defines(cls: type, attribute: str) -> bool:
    """The class or a base has `attribute`, or one of their methods sets `self.attribute`."""
    assigned = re.compile(rf"self\.{attribute}\b(\s*:[^=\n]+)?\s*=[^=]")
    return hasattr(cls, attribute) or any(
        assigned.search(inspect.getsource(base)) for base in cls.__mro__
        if base.__module__.startswith("rlcourse"))


def test_every_class_attribute_named_in_a_lesson_or_the_readme_is_there():
    """'`RLModule.get_state`' in a lesson's table must lead to something the class defines."""
    classes = {}
    for module in pkgutil.walk_packages(rlcourse.__path__, "rlcourse."):
        for name, value in vars(importlib.import_module(module.name)).items():
            if isinstance(value, type) and value.__module__.startswith("rlcourse"):
                classes.setdefault(name, value)
    texts = {name: "\n".join(cell.source for cell in notebook.cells) for name, notebook in lessons()}
    texts["README.md"] = (ROOT / "README.md").read_text()
    named = {(doc, *ref) for doc, text in texts.items() for ref in CLASS_ATTRIBUTE.findall(text)}
    assert len({(cls, attribute) for _, cls, attribute in named if cls in classes}) >= 20
    missing = sorted(f"{doc}: {cls}.{attribute}" for doc, cls, attribute in named
                     if cls in classes and not _defines(classes[cls], attribute))
    assert not missing, f"names that lead nowhere: {missing}"
