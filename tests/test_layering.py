"""The package's layering: rooms in a fixed order, each importing only its own room and those below.

Rooms, lowest first (README.md, "Architecture: the rooms' layers"):

    0. core/__init__.py: names every room shares (DEFAULT_MODULE_ID, ALL_MODULES), as RLlib's
                    rllib/core/__init__.py; it imports nothing
    1. utils/       shared helpers: checkpoints on disk, metrics, resources, replay buffers, checks
    2. env API      env/env_context.py, env/registry.py, env/multi_agent_env.py and the episodes
                    (env/single_agent_episode.py, env/multi_agent_episode.py): what an env and an
                    episode are, nothing that runs one
    3. connectors/  small callables between env and module
    4. core/        RLModule and Learner (with their groups and specs)
    5. callbacks/   the hooks a run calls
    6. env/         the rest of env/: EnvRunner, EnvRunnerGroup and what runs envs
    7. offline/     recording runners and reading recorded data (RLlib's offline/ subclasses
                    its SingleAgentEnvRunner; its algorithms read OfflineData)
    8. tune/        Ray Tune's search spaces and Trainable (RLlib's Algorithm is a Tune Trainable)
    9. algorithms/  AlgorithmConfig, Algorithm and one folder per algorithm
   10. serve/       a trained policy behind Ray Serve
   11. rlcourse/__init__.py: the package's front door (`from rlcourse import PPOConfig`)
   12. course/      what serves the lessons (and __main__.py, its command line); nothing in the
                    engine imports it

One exception, as in RLlib: utils/ may import the episode modules of the env API (its replay
buffers and postprocessing store and read episodes), and nothing else of env/.

Counted as imports: `import` and `from ... import` anywhere in a file (inside functions too: a lazy
import is still a dependency an editor follows), and "rlcourse.module:Name" strings (classes named
for an import by string). Not counted: imports under `if TYPE_CHECKING:` (they never run; they let
a lower room name a higher room's type in a hint, as RLlib's Learner names AlgorithmConfig), except
in utils/, which names nothing above it even in a hint (it declares the settings it reads); and the
checkpoint allowlist in utils/checkpoint_contents.py, which is data: the classes a checkpoint *file*
may name, imported only when a file names them, as pickle imports what a file names in RLlib's
utils/checkpoints.py.

A test fails on an import from a lower room to a higher one, and on any import cycle between
modules, naming each file, line and import.
"""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "rlcourse"

ENV_API = {"env_context", "registry", "multi_agent_env", "single_agent_episode",
           "multi_agent_episode"}
EPISODES = {"rlcourse.env.single_agent_episode", "rlcourse.env.multi_agent_episode"}
ROOMS = ["core constants", "utils", "env API", "connectors", "core", "callbacks", "env", "offline",
         "tune", "algorithms", "serve", "rlcourse", "course"]
CLASS_STRING = re.compile(r"^(rlcourse(?:\.\w+)+):[\w.]+$")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}
PACKAGES = {module for module, path in MODULES.items() if path.stem == "__init__"}


def room(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "rlcourse"
    if module == "rlcourse.core":
        return "core constants"
    if parts[1] == "__main__":
        return "course"
    if parts[1] == "env" and len(parts) > 2 and parts[2] in ENV_API:
        return "env API"
    return parts[1]


def _resolve(name: str) -> str | None:
    """The module of rlcourse that `name` (a module, or a name inside one) is defined in."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports_of(module: str, source: str, type_checking: bool = False) -> list[tuple[int, str]]:
    """(line, imported module of rlcourse) for every import in `source`, the text of `module`, that
    the rules above count (and those under `if TYPE_CHECKING:` too when `type_checking`)."""
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node) and not type_checking:
            for child in node.orelse:
                visit(child)
            return
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package `module` is in (or is)
                parts = module.split(".")
                package = parts[:len(parts) - node.level + (module in PACKAGES)]
                base = ".".join(package + ([base] if base else []))
            names = [f"{base}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = CLASS_STRING.match(node.value)
            names = [match.group(1)] if match else []
        for name in names:
            target = _resolve(name) if name.startswith("rlcourse") else None
            if target and target != module and (node.lineno, target) not in found:
                found.append((node.lineno, target))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(source))
    return found


GRAPH = {module: imports_of(module, path.read_text()) for module, path in MODULES.items()}


def where(module: str, line: int) -> str:
    return f"{module.replace('.', '/')}{'/__init__' * (module in PACKAGES)}.py:{line}"


def upward_imports(graph: dict[str, list[tuple[int, str]]]) -> list[str]:
    problems = []
    for module, imports in graph.items():
        for line, target in imports:
            low, high = room(module), room(target)
            if low == "utils" and high == "env API":
                if target not in EPISODES:
                    problems.append(f"{where(module, line)} imports {target}: utils/ may import "
                                    "only the episode modules of env/")
            elif ROOMS.index(low) < ROOMS.index(high):
                problems.append(f"{where(module, line)} imports {target}: room {low!r} is below "
                                f"room {high!r}")
    return problems


def cycles(graph: dict[str, list[tuple[int, str]]]) -> dict[frozenset[str], str]:
    """{modules of a strongly connected group: one cycle through them, as file:line import steps}."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def connect(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        for _, w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while group[-1:] != [v]:
                group.append(stack.pop())
            if len(group) > 1:
                groups.append(group)

    for v in graph:
        if v not in index:
            connect(v)
    found = {}
    for group in groups:  # the shortest cycle through the group's first module (breadth first)
        members, start = set(group), min(group)
        came_from: dict[str, tuple[str, int]] = {}
        frontier = [start]
        while start not in came_from:
            next_frontier = []
            for v in frontier:
                for line, w in graph[v]:
                    if w in members and w not in came_from:
                        came_from[w] = (v, line)
                        next_frontier.append(w)
            frontier = next_frontier
        steps, w = [], start
        while not steps or w != start:
            v, line = came_from[w]
            steps.insert(0, f"{where(v, line)} imports {w}")
            w = v
        found[frozenset(group)] = f"{len(group)} modules: " + "; ".join(steps)
    return found


def test_the_checks_see_lazy_imports_and_class_strings_and_fail():
    """The checks below can fail: a function-level import and a "module:Name" string are found, a
    TYPE_CHECKING import is not, and an upward import and a cycle are reported."""
    source = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import rlcourse.tune\n"
              "def f():\n    from rlcourse.algorithms import algorithm_config\n"
              "X = 'rlcourse.core.learner.learner:Learner'\n")
    assert imports_of("rlcourse.utils", "from . import checkpoints\nfrom .. import env\n") == [
        (1, "rlcourse.utils.checkpoints"), (2, "rlcourse.env")]
    found = imports_of("rlcourse.utils.checkpoints", source)
    assert found == [(5, "rlcourse.algorithms.algorithm_config"),
                     (6, "rlcourse.core.learner.learner")]
    graph = {"rlcourse.utils.checkpoints": found, "rlcourse.core.learner.learner": [],
             "rlcourse.algorithms.algorithm_config": [(9, "rlcourse.utils.checkpoints")]}
    assert upward_imports(graph) == [
        "rlcourse/utils/checkpoints.py:5 imports rlcourse.algorithms.algorithm_config: room "
        "'utils' is below room 'algorithms'",
        "rlcourse/utils/checkpoints.py:6 imports rlcourse.core.learner.learner: room 'utils' is "
        "below room 'core'"]
    assert list(cycles(graph).values()) == [
        "2 modules: rlcourse/algorithms/algorithm_config.py:9 imports rlcourse.utils.checkpoints; "
        "rlcourse/utils/checkpoints.py:5 imports rlcourse.algorithms.algorithm_config"]


def test_no_room_imports_a_room_above_it():
    problems = upward_imports(GRAPH)
    assert not problems, "Imports against the layering (tests/test_layering.py):\n" + "\n".join(
        problems)


def test_utils_names_no_room_above_it_even_in_type_hints():
    graph = {module: imports_of(module, path.read_text(), type_checking=True)
             for module, path in MODULES.items() if room(module) == "utils"}
    problems = upward_imports(graph)
    assert not problems, "utils/ imports against the layering, TYPE_CHECKING included:\n" + (
        "\n".join(problems))


def test_no_import_cycles():
    found = cycles(GRAPH)
    assert not found, "Import cycles (function-level imports count):\n" + "\n".join(found.values())


def test_every_engine_file_is_at_most_300_lines():
    """One concept per file, each a page or so (issue 29): a longer file is two concepts."""
    long = {str(path.relative_to(ROOT)): n for path in PACKAGE.rglob("*.py")
            if "course" not in path.relative_to(PACKAGE).parts[:1]
            and (n := len(path.read_text().splitlines())) > 300}
    assert not long, f"files over 300 lines (split or tighten them): {long}"
