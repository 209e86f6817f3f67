"""`rlcourse doctor`: passes on this machine, and each check fails with a fix when its thing is off."""

import subprocess
import sys
from pathlib import Path

import pytest

from rlcourse.course import doctor

pytestmark = pytest.mark.timeout(300)


def test_the_command_passes_on_this_machine():
    out = subprocess.run([sys.executable, "-m", "rlcourse", "doctor"], capture_output=True,
                         text=True, timeout=240)
    assert out.returncode == 0, out.stdout + out.stderr
    for name in ("Python", "Packages", "torch", "CPUs", "Memory", "/dev/shm", "Ray", "Widgets"):
        assert name in out.stdout
    assert "Ready for the course." in out.stdout


def test_the_package_check_reads_the_repositorys_lock():
    """The default lock is the repository's own (a wrong path made every learner see a warning)."""
    assert Path(__file__).resolve().parents[1] / "requirements.lock" == doctor.LOCK
    check = doctor.check_packages()
    assert check.status == "OK" and "requirements.lock" in check.found, check


def test_a_wrong_pin_is_named(tmp_path):
    lock = tmp_path / "requirements.lock"
    lock.write_text("numpy==0.0.1\nray==2.60.0  # comment\n")
    check = doctor.check_packages(lock)
    assert check.status == "FAIL" and "numpy" in check.found and "0.0.1" in check.found
    assert "ray" not in check.found and "make lab" in check.fix


def test_this_machines_torch_is_the_cpu_build():
    assert not doctor.torch_is_cuda_build()
    check = doctor.check_torch_build()
    assert check.found.startswith("torch 2.13.0") and "CPU build" in check.found
    assert check.status == ("WARN" if doctor.has_nvidia_gpu() else "OK")


@pytest.mark.parametrize("cuda, gpu, status, fix", [
    (True, False, "WARN", "rm -rf .venv && make install"),
    (False, True, "WARN", "TORCH_INDEX=https://download.pytorch.org/whl/cu"),
    (True, True, "OK", ""), (False, False, "OK", "")])
def test_a_torch_build_that_does_not_suit_the_machine_warns_with_the_fix(monkeypatch, cuda, gpu,
                                                                         status, fix):
    monkeypatch.setattr(doctor, "torch_is_cuda_build", lambda: cuda)
    monkeypatch.setattr(doctor, "has_nvidia_gpu", lambda: gpu)
    check = doctor.check_torch_build()
    assert check.status == status and fix in check.fix and bool(check.fix) == bool(fix)


def test_too_little_memory_fails_and_one_cpu_warns(monkeypatch):
    monkeypatch.setattr(doctor, "usable_memory_gb", lambda: 1.0)
    monkeypatch.setattr(doctor, "usable_cpus", lambda: 1.0)
    assert doctor.check_memory().status == "FAIL"
    assert doctor.check_cpus().status == "WARN"


def test_a_missing_widget_extension_fails_with_the_fix(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    monkeypatch.setattr(sys, "base_prefix", str(tmp_path))
    check = doctor.check_widgets()
    assert check.status == "FAIL" and "jupyterlab_widgets" in check.fix


def test_main_exits_1_when_a_check_fails(monkeypatch, capsys):
    failing = lambda: doctor.Check("Memory", "FAIL", "1.0 GiB", "close programs")  # noqa: E731
    monkeypatch.setattr(doctor, "CHECKS", (doctor.check_python, failing))
    assert doctor.main([]) == 1
    out = capsys.readouterr().out
    assert "Fix before the workshop: Memory." in out and "-> close programs" in out


def test_the_widget_extension_path_is_where_jupyterlab_widgets_installs_it():
    assert (Path(sys.prefix) / doctor.WIDGET_EXTENSION / "package.json").is_file()


@pytest.mark.parametrize("error, status", [
    (TimeoutError("Timed out while waiting for the GCS"), "WARN"),
    (ValueError("object store full"), "FAIL")])
def test_a_slow_ray_start_warns_while_a_broken_one_fails(monkeypatch, error, status):
    """A busy machine that starts Ray slowly can take the course (lesson 01 must not fail there)."""
    import ray

    import rlcourse.utils.resources

    def failing_init_ray(**kwargs):
        raise error

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(rlcourse.utils.resources, "init_ray", failing_init_ray)
    check = doctor.check_ray()
    assert check.status == status and str(error) in check.found
    assert ("busy" in check.fix) == (status == "WARN")
