"""Every lesson's exercise, taken from the notebook as learners get it: the untouched stub is reported
as not attempted (and the lesson goes on), and with its solution put in the stub's place the checker
says "Correct".

A solution (rlcourse/course/exercises/solutions/<name>.py) defines the same names as its stub; the
test replaces the cell's top-level statements that define those names with the solution's source
and runs the cell, with stand-ins for what earlier cells of the lesson defined.
"""

import ast
import contextlib
import io
from pathlib import Path
from types import SimpleNamespace

import gymnasium as gym
import nbformat
import numpy as np
import pandas as pd
import pytest

from rlcourse.course import exercises
from rlcourse.course.exercises.common import SOLUTIONS, show_solution, solution_source

ROOT = Path(__file__).resolve().parents[1]

# What earlier cells of each exercise's lesson defined and its exercise cell uses.
CLUSTER = SimpleNamespace(address="127.0.0.1:6379", nodes={"head": SimpleNamespace(num_cpus=1),
                                                           "worker-1": SimpleNamespace(num_cpus=1)})
CONTEXT = {
    "run_episode": ("01_ray_and_rl_basics.ipynb", {}),
    "gae": ("02_anatomy_of_an_algorithm.ipynb", {"np": np}),
    "clipped_surrogate": ("02_anatomy_of_an_algorithm.ipynb", {}),
    "corridor": ("03_custom_environments.ipynb", {"gym": gym, "np": np}),
    "scaling_table": ("04_scaling.ipynb", {"cpu_rows": [
        {"workers": 1, "env_steps_per_s": 3000.0}, {"workers": 2, "env_steps_per_s": 5500.0},
        {"workers": 4, "env_steps_per_s": 5600.0}, {"workers": 8, "env_steps_per_s": 5300.0}]}),
    "vectorize_prediction": ("04_scaling.ipynb", {}),
    "vtrace": ("05_impala.ipynb", {"np": np}),
    "worker_start_command": ("06_ray_clusters.ipynb", {"cluster": CLUSTER}),
    "survivable_placement": ("06_ray_clusters.ipynb", {"cluster": CLUSTER}),
    "pick_best_config": ("07_ray_tune.ipynb", {}),
    "pole_wobble": ("08_serving_a_policy.ipynb", {}),
    "dqn_target": ("09_off_policy.ipynb", {}),
    "self_play_mapping": ("10_multi_agent.ipynb", {}),
    "diagnose_runs": ("11_diagnosing_a_run.ipynb", {"mystery": {name: pd.DataFrame()
                                                                for name in "ABC"}}),
    "weighted_importance_sampling": ("13_offline_rl.ipynb", {"np": np}),
    "simulator_loop": ("14_external_simulators.ipynb", {}),
    "time_to_return": ("15_graduating_to_rllib.ipynb", {}),
}
CHECKERS = {getattr(exercises, name).exercise_name: name for name in exercises.__all__
            if hasattr(getattr(exercises, name), "exercise_name")}


def exercise_cell(name: str) -> str:
    lesson, _ = CONTEXT[name]
    notebook = nbformat.read(ROOT / "lessons" / lesson, as_version=4)
    call = f"{CHECKERS[name]}("
    cells = [cell.source for cell in notebook.cells if cell.cell_type == "code"
             and any(call in line and "import" not in line for line in cell.source.splitlines())]
    assert len(cells) == 1, f"{lesson}: expected one cell calling {call}, found {len(cells)}"
    return cells[0]


def defined_names(tree: ast.Module) -> dict[ast.stmt, set[str]]:
    """Top-level statements that define names (functions, classes, assignments), and the names."""
    names = {}
    for statement in tree.body:
        if isinstance(statement, ast.FunctionDef | ast.ClassDef):
            names[statement] = {statement.name}
        elif isinstance(statement, ast.Assign):
            names[statement] = {t.id for t in statement.targets if isinstance(t, ast.Name)}
    return names


def with_solution(cell: str, solution: str) -> str:
    """`cell` with the statements that define the solution's names replaced by the solution."""
    wanted = set().union(*defined_names(ast.parse(solution)).values())
    stubs = [s for s, names in defined_names(ast.parse(cell)).items()
             if names & wanted and not isinstance(s, ast.Assign)]
    assert stubs, f"no stub in the cell defines any of {sorted(wanted)}"
    lines = cell.splitlines()
    first = stubs[0].lineno - 1 - len(getattr(stubs[0], "decorator_list", []))
    keep = [i for i in range(len(lines))
            if not any(s.lineno - 1 <= i < s.end_lineno for s in stubs)]
    before = [lines[i] for i in keep if i < first]
    after = [lines[i] for i in keep if i >= first]
    return "\n".join([*before, solution, *after])


def run(source: str, name: str) -> str:
    namespace = dict(CONTEXT[name][1])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, f"<{name} exercise cell>", "exec"), namespace)
    return out.getvalue()


def test_every_exercise_has_a_solution_a_checker_and_a_lesson():
    solutions = {p.stem for p in SOLUTIONS.glob("*.py") if p.stem != "__init__"}
    assert solutions == set(CHECKERS) == set(CONTEXT)


@pytest.mark.parametrize("name", sorted(CONTEXT))
def test_the_untouched_stub_is_reported_as_not_attempted(name):
    cell = exercise_cell(name)
    assert "NotImplementedError" in cell and "TODO" in cell, f"{name}: the cell must ship unsolved"
    out = run(cell, name)
    assert "Not attempted yet" in out and f"show_solution({name!r})" in out, out
    assert "Correct" not in out


@pytest.mark.parametrize("name", sorted(CONTEXT))
def test_the_solution_in_the_stubs_place_is_correct(name):
    out = run(with_solution(exercise_cell(name), solution_source(name)), name)
    assert "Correct" in out and "Not attempted" not in out, out


def test_show_solution_prints_the_solution_and_names_the_exercises(capsys):
    show_solution("gae")
    assert "def my_gae(" in capsys.readouterr().out
    with pytest.raises(KeyError, match="run_episode"):
        show_solution("no-such-exercise")
