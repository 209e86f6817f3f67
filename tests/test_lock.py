"""The Makefile, environment.yml and binder/ all install exactly what requirements.lock pins."""

import re
import sysconfig
from importlib import metadata
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def read_pins(path: Path) -> dict[str, str]:
    """name -> version of every `name==version` line, following `-r other-file` includes."""
    pins: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line.startswith("-r "):
            pins.update(read_pins((path.parent / line[3:].strip()).resolve()))
        elif "==" in line:
            name, version = line.split("==")
            pins[canonical(name)] = version.strip()
    return pins


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name.split("[")[0]).lower().strip()


LOCK = read_pins(ROOT / "requirements.lock")


def test_lock_pins_the_cpu_torch_and_the_course_stack():
    assert LOCK["torch"] == "2.13.0"
    for name in ("ray", "gymnasium", "numpy", "jupyterlab", "nbval", "ipywidgets", "matplotlib",
                 "pytest", "pytest-timeout", "ruff"):
        assert name in LOCK, name
    assert not any(name.startswith("nvidia-") for name in LOCK)  # no CUDA wheels


def test_binder_installs_exactly_the_lock():
    assert read_pins(ROOT / "binder" / "requirements.txt") == LOCK
    assert (ROOT / "binder" / "runtime.txt").read_text().strip() == "python-3.11"
    assert "pip install" in (ROOT / "binder" / "postBuild").read_text()


def test_environment_yml_installs_exactly_the_lock():
    yml = ROOT / "environment.yml"
    env = yaml.safe_load(yml.read_text())
    assert "python=3.11" in env["dependencies"]
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    pins: dict[str, str] = {}
    for line in pip_section:
        if line.startswith("-r "):  # pip resolves -r relative to the yml file
            pins.update(read_pins(yml.parent / line[3:].strip()))
    assert pins == LOCK


def test_makefile_installs_from_the_lock():
    assert "-r requirements.lock" in (ROOT / "Makefile").read_text()


def test_this_environment_matches_the_lock():
    """The suite runs on the pinned versions (a stale .venv would show up here)."""
    for name, version in LOCK.items():
        installed = metadata.version(name)
        assert installed.split("+")[0] == version, f"{name}: installed {installed}, lock {version}"


def test_nothing_outside_the_lock_is_installed():
    """Every installed distribution is pinned: an unpinned transitive dependency would show up here.

    Keeps out rfc3987-syntax in particular (see the lock's header): it costs every Ray process 2.6 s.
    """
    allowed = set(LOCK) | {"rlcourse", "pip"}
    site_packages = sysconfig.get_paths()["purelib"]  # not Ray's vendored ray/thirdparty_files
    installed = {canonical(d.metadata["Name"]) for d in metadata.distributions(path=[site_packages])}
    assert installed - allowed == set()
