"""Every lesson trains CartPole with the course's settings: those of its tuned example.

tuned_examples/ppo/cartpole_ppo.py, tuned_examples/impala/cartpole_impala.py and
tuned_examples/appo/cartpole_appo.py are the one source of the course's CartPole settings. Lessons
write them out (a learner should see them), so this test reads every PPO, IMPALA and APPO
`.training(...)` call, `.rl_module(model_config=...)` call and
`rlcourse train --set` string in the lessons' code, and fails when one differs from its tuned
example. A lesson that deliberately differs names the settings in DIFFERENCES and says why in its
text (and must not call them the course's CartPole settings).
"""

import ast
import contextlib
import itertools
import re
import shlex
from pathlib import Path

import nbformat
import pytest

from rlcourse import APPOConfig, IMPALAConfig, PPOConfig
from rlcourse.core.rl_module.default_model_config import DEFAULT_MODEL_CONFIG
from rlcourse.course.train_job import parse_settings

ROOT = Path(__file__).resolve().parents[1]
LESSONS = sorted((ROOT / "lessons").glob("[0-9][0-9]_*.ipynb"))
# The keyword that marks a `.training(...)` call as the algorithm's, its config class, its source.
ALGORITHMS = {"num_epochs": (PPOConfig, ROOT / "tuned_examples/ppo/cartpole_ppo.py"),
              "learner_queue_size": (IMPALAConfig, ROOT / "tuned_examples/impala/cartpole_impala.py"),
              "circular_buffer_num_batches": (APPOConfig, ROOT / "tuned_examples/appo/cartpole_appo.py")}
# Settings a lesson sets differently on purpose; the lesson's text names each and says why.
DIFFERENCES = {
    "02_anatomy_of_an_algorithm.ipynb": {"model_config"},  # shows RLlib's default network
    "04_scaling.ipynb": {"num_epochs"},  # 4 iterations that only show two learners agree
    "07_ray_tune.ipynb": {"num_epochs"},  # many short trials, each sweep setting its own lr
    "11_diagnosing_a_run.ipynb": {"use_kl_loss"},  # measures each update's KL (kl_coeff=0.0)
}


def chains(source: str) -> list[dict[str, ast.Call]]:
    """Each method chain (`A().b(...).c(...)`) of the code, as {method name: its call}."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            calls = {}
            while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                calls.setdefault(node.func.attr, node)
                node = node.func.value
            found.append(calls)
    return found


def literal_keywords(call: ast.Call) -> dict:
    """The call's keyword arguments whose values are literals (a Tune search space is not)."""
    values = {}
    for keyword in call.keywords:
        with contextlib.suppress(ValueError):
            values[keyword.arg] = ast.literal_eval(keyword.value)
    return values


def set_strings(source: str) -> list[dict]:
    """`rlcourse train ... --set key=value ...` settings in the code's strings, read as the command
    reads them."""
    settings = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "--set " in node.value:
            words = shlex.split(node.value.split("--set ", 1)[1])
            pairs = list(itertools.takewhile(lambda word: not word.startswith("--"), words))
            settings.append(parse_settings(pairs))
    return settings


def tuned(path: Path) -> tuple[dict, dict]:
    """The tuned example's literal `.training(...)` settings and model_config."""
    for calls in chains(path.read_text()):
        if "training" in calls and "rl_module" in calls:
            return (literal_keywords(calls["training"]),
                    literal_keywords(calls["rl_module"])["model_config"])
    raise AssertionError(f"{path} has no config chain with .training and .rl_module")


def lesson_settings(path: Path) -> list[tuple[str, dict, dict | None]]:
    """(marking keyword, training settings, model_config or None) of each CartPole config."""
    found = []
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        source = "\n".join(line for line in cell.source.splitlines()
                           if not line.lstrip().startswith(("!", "%")))
        for calls in chains(source):
            environment = calls.get("environment")
            if environment is not None and environment.args and not (
                    isinstance(environment.args[0], ast.Constant)
                    and environment.args[0].value == "CartPole-v1"):
                continue  # another env: not the CartPole settings
            training = literal_keywords(calls["training"]) if "training" in calls else {}
            marks = [mark for mark in ALGORITHMS if mark in training]
            model = literal_keywords(calls["rl_module"]).get("model_config") \
                if "rl_module" in calls else None
            if marks:
                found.append((marks[0], training, model))
            elif model is not None and "training" not in calls and "fcnet_hiddens" in model:
                found.append(("model_config", {}, model))  # a model set apart from .training
        for settings in set_strings(source):
            found.append(("num_epochs", settings, settings.pop("model_config", None)))
    return found


@pytest.mark.parametrize("path", LESSONS, ids=[path.name for path in LESSONS])
def test_lessons_use_the_tuned_examples_settings(path):
    allowed = DIFFERENCES.get(path.name, set())
    found = lesson_settings(path)
    for mark, training, model in found:
        config_class, source = ALGORITHMS.get(mark, ALGORITHMS["num_epochs"])
        truth, truth_model = tuned(source)
        if mark != "model_config":
            defaults = config_class()
            for key, value in truth.items():
                theirs = training.get(key, getattr(defaults, key))
                assert theirs == value or key in allowed, (
                    f"{path.name} sets {key}={theirs!r}; {source.name} has {value!r}: use it, or "
                    "list it in DIFFERENCES and say why in the lesson")
        if model is not None and "model_config" not in allowed:
            ours = {**DEFAULT_MODEL_CONFIG, **config_class().model_config, **model}
            for key, value in truth_model.items():
                assert ours[key] == value, (f"{path.name} sets model_config[{key!r}]="
                                            f"{ours[key]!r}; {source.name} has {value!r}")
    if found and "model_config" not in allowed:  # else its configs take RLlib's [256, 256] nets
        assert any(model is not None for _, _, model in found), (
            f"{path.name}: its CartPole configs set no model_config")


@pytest.mark.parametrize("name", sorted(DIFFERENCES))
def test_lessons_that_differ_say_which_settings_and_why(name):
    cells = nbformat.read(ROOT / "lessons" / name, as_version=4).cells
    text = "\n".join(cell.source for cell in cells)
    assert "cartpole_ppo.py" in text, f"{name}: name the tuned example its settings differ from"
    for key in DIFFERENCES[name]:
        assert key in text, f"{name}: say why its {key} differs from the tuned example's"
    assert "course's CartPole settings" not in text or "than the course's CartPole settings" in text \
        or "differ" in text, f"{name}: settings that differ are not the course's CartPole settings"


def test_every_lesson_that_names_the_settings_sets_them():
    for path in LESSONS:
        text = "\n".join(cell.source for cell in nbformat.read(path, as_version=4).cells)
        if re.search(r"course's CartPole settings", text) and path.name not in DIFFERENCES:
            assert lesson_settings(path), f"{path.name} names the course's CartPole settings"
