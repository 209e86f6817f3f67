"""The Makefile, environment.yml and binder/ all install exactly what requirements.lock pins."""

import base64
import hashlib
import re
import subprocess
import sys
import sysconfig
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
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
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def test_lock_pins_the_cpu_torch_and_the_course_stack():
    assert LOCK["torch"] == "2.13.0"
    for name in ("ray", "gymnasium", "numpy", "jupyterlab", "nbval", "ipywidgets", "matplotlib",
                 "pytest", "pytest-timeout", "ruff"):
        assert name in LOCK, name
    assert not any(name.startswith("nvidia-") for name in LOCK)  # no CUDA wheels


def test_binder_installs_exactly_the_lock():
    assert read_pins(ROOT / "binder" / "requirements.txt") == LOCK
    assert f"--extra-index-url {CPU_INDEX}" in (ROOT / "binder" / "requirements.txt").read_text()
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
    assert f"--extra-index-url {CPU_INDEX}" in pip_section


def test_makefile_installs_the_cpu_torch_then_the_lock():
    makefile = (ROOT / "Makefile").read_text()
    assert f"TORCH_INDEX ?= {CPU_INDEX}\n" in makefile
    torch_step = makefile.index('--no-deps --index-url $(TORCH_INDEX) "$(TORCH_PIN)"')
    assert torch_step < makefile.index("-r requirements.lock")  # torch first: the lock keeps it


def _digest(text: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()


def _wheel(index: Path, version: str) -> None:
    """A minimal wheel of a package `demo` in a simple-index folder."""
    folder = index / "demo"
    folder.mkdir(parents=True)
    name, info = f"demo-{version}-py3-none-any.whl", f"demo-{version}.dist-info"
    files = {"demo/__init__.py": f"BUILD = {version!r}\n",
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: demo\nVersion: {version}\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                              "Tag: py3-none-any\n"}
    record = "".join(f"{path},sha256={_digest(text)},{len(text)}\n" for path, text in files.items())
    with zipfile.ZipFile(folder / name, "w") as wheel:
        for path, text in {**files, f"{info}/RECORD": record + f"{info}/RECORD,,\n"}.items():
            wheel.writestr(path, text)
    (folder / "index.html").write_text(f'<a href="{name}">{name}</a>')


@pytest.mark.timeout(120)
def test_an_extra_indexs_cpu_build_outranks_the_main_indexs_plain_build(tmp_path):
    """Why binder/ and environment.yml get the CPU torch: for `torch==2.13.0`, pip takes PyTorch's
    2.13.0+cpu (a local version, ranked higher) over PyPI's 2.13.0, the CUDA build on Linux."""
    _wheel(tmp_path / "pypi", "2.13.0")
    _wheel(tmp_path / "cpu", "2.13.0+cpu")
    (tmp_path / "requirements.txt").write_text(
        f"--extra-index-url {(tmp_path / 'cpu').as_uri()}\ndemo==2.13.0\n")
    isolated = {"PIP_CONFIG_FILE": "/dev/null", "PIP_NO_INPUT": "1", "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--index-url",
                    (tmp_path / "pypi").as_uri(), "-r", str(tmp_path / "requirements.txt"),
                    "-d", str(tmp_path / "got")], check=True, env=isolated, timeout=100)
    assert [p.name for p in (tmp_path / "got").iterdir()] == ["demo-2.13.0+cpu-py3-none-any.whl"]


def test_this_environment_matches_the_lock():
    """The suite runs on the pinned versions (a stale .venv would show up here)."""
    for name, version in LOCK.items():
        installed = metadata.version(name)
        assert installed.split("+")[0] == version, f"{name}: installed {installed}, lock {version}"


def test_nothing_outside_the_lock_is_installed():
    """Every installed distribution is pinned: an unpinned transitive dependency would show up here.

    Keeps out rfc3987-syntax in particular (see the lock's header): it costs every Ray process 2.6 s.
    A CUDA build of torch (`make install TORCH_INDEX=...`) may bring its own packages (nvidia-*).
    """
    allowed = set(LOCK) | {"rlcourse", "pip"} | torch_requirements()
    site_packages = sysconfig.get_paths()["purelib"]  # not Ray's vendored ray/thirdparty_files
    installed = {canonical(d.metadata["Name"]) for d in metadata.distributions(path=[site_packages])}
    assert installed - allowed == set()


def torch_requirements() -> set[str]:
    """Every distribution the installed torch build requires, transitively (a CUDA build's nvidia-*)."""
    found: set[str] = set()
    todo = ["torch"]
    while todo:
        for requirement in metadata.requires(todo.pop()) or []:
            if "extra ==" in requirement:
                continue
            name = canonical(re.split(r"[ ;<>=!~\[(]", requirement, maxsplit=1)[0])
            if name not in found:
                found.add(name)
                try:
                    metadata.distribution(name)
                except metadata.PackageNotFoundError:
                    continue  # a requirement for another platform or Python
                todo.append(name)
    return found
