"""Fixtures for the browser tests: JupyterLab from the project's .venv on a copy of the lessons, and
headless Chromium driven by Playwright.

The server is this test's alone (a free loopback port, a random token, its own Jupyter, IPython and
Ray temp dirs), started through binder/start as `make lab` starts it, and every process it starts
(kernels, and the Ray processes the kernels start) is recorded while it runs. Teardown shuts the
kernels and the server down, kills whatever of that record is still alive, and fails if any of it
survives. Screenshots and the server's log are kept in test-artifacts/browser/.
"""

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from rlcourse.course.node_processes import is_alive

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "browser"
CHROMIUM = os.environ.get("RLCOURSE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--no-first-run"]


class ProcessRecord(threading.Thread):
    """Records every descendant of a process, twice a second, until stopped.

    Kernels run in sessions of their own and Ray's processes may outlive a killed kernel (they are
    then re-parented to init), so the tree at teardown can miss them: the record does not.
    """

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.root = psutil.Process(pid)
        self.seen: dict[int, psutil.Process] = {}
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(0.5):
            self.snapshot()

    def snapshot(self) -> None:
        with contextlib.suppress(psutil.NoSuchProcess):
            for process in self.root.children(recursive=True):
                self.seen.setdefault(process.pid, process)

    def stop(self) -> None:
        self.snapshot()
        self._stop_event.set()
        self.join()

    def alive(self) -> list[psutil.Process]:
        """Recorded processes still running (is_running also checks the pid was not reused)."""
        return [process for process in self.seen.values() if is_alive(process)]


class JupyterLab:
    """A running JupyterLab server: its URL, token, notebook folder and REST API."""

    def __init__(self, root_dir: Path, work_dir: Path):
        self.root_dir, self.token = root_dir, secrets.token_hex(16)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = work_dir / "jupyterlab.log"
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("JUPYTER", "RAY_ADDRESS", "IPYTHON"))}
        for name, variable in (("config", "JUPYTER_CONFIG_DIR"), ("runtime", "JUPYTER_RUNTIME_DIR"),
                               ("settings", "JUPYTERLAB_SETTINGS_DIR"),
                               ("workspaces", "JUPYTERLAB_WORKSPACES_DIR"), ("ipython", "IPYTHONDIR"),
                               ("ray", "RAY_TMPDIR")):  # RAY_TMPDIR: no joining another's `ray start`
            (work_dir / name).mkdir()
            env[variable] = str(work_dir / name)
        # No "Would you like to get notified about official Jupyter news?" over the screenshots.
        (work_dir / "config" / "labconfig").mkdir()
        (work_dir / "config" / "labconfig" / "page_config.json").write_text(json.dumps(
            {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
        command = [ROOT / "binder" / "start", ROOT / ".venv" / "bin" / "jupyter", "lab",
                   "--no-browser", "--ip=127.0.0.1", f"--port={self.port}",
                   "--ServerApp.port_retries=0", f"--IdentityProvider.token={self.token}",
                   f"--ServerApp.root_dir={root_dir}", "--allow-root",  # CI runs as root
                   # No calls to the internet: no news feed, no update check.
                   "--LabApp.news_url=None",
                   "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        self.record = ProcessRecord(self.process.pid)
        self.record.start()

    def api(self, method: str, path: str, timeout_s: float = 10) -> object:
        request = urllib.request.Request(f"{self.url}/api/{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            body = response.read()
        return json.loads(body) if body else None

    def wait_until_ready(self, timeout_s: float = 180) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"JupyterLab exited: {self.log_path.read_text()[-3000:]}")
            with contextlib.suppress(OSError):
                self.api("GET", "status", timeout_s=5)
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"JupyterLab did not answer in {timeout_s} s")
            time.sleep(0.5)

    def shutdown_kernels(self) -> None:
        """Interrupt, then shut down every kernel (Ray's atexit hook then stops its processes)."""
        with contextlib.suppress(OSError):
            for kernel in self.api("GET", "kernels"):
                with contextlib.suppress(OSError):
                    self.api("POST", f"kernels/{kernel['id']}/interrupt")
                    self.api("DELETE", f"kernels/{kernel['id']}", timeout_s=60)

    def stop(self) -> list[str]:
        """Stop the kernels, the server and every process it started; return what survived."""
        self.shutdown_kernels()
        with contextlib.suppress(OSError):
            self.api("POST", "shutdown")
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
        self.record.stop()
        leftovers = self.record.alive()
        for process in leftovers:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()
        psutil.wait_procs(leftovers, timeout=20)
        return [f"{p.pid} {' '.join(p.cmdline())[:120]}" for p in self.record.alive()]


def free_port() -> int:
    """A loopback port nobody listens on now (the server is told not to try others)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """test-artifacts/browser/, ignored by git (it carries its own .gitignore)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS.parent / ".gitignore").write_text("*\n")
    return ARTIFACTS


@pytest.fixture(scope="session")
def jupyter_lab(tmp_path_factory, artifacts) -> Iterator[JupyterLab]:
    """JupyterLab on a copy of lessons/ (the lessons write checkpoints; the repo stays clean)."""
    work_dir = tmp_path_factory.mktemp("lab")
    lessons = work_dir / "lessons"
    lessons.mkdir()
    for notebook in (ROOT / "lessons").glob("[0-9][0-9]_*.ipynb"):
        shutil.copy(notebook, lessons)
    lab = JupyterLab(lessons, work_dir)
    try:
        lab.wait_until_ready()
        yield lab
    finally:
        survivors = lab.stop()
        shutil.copy(lab.log_path, artifacts / "jupyterlab.log")
        assert not survivors, f"processes of the JupyterLab run survived teardown: {survivors}"


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """Debian's Chromium, headless (Playwright's own browser download is not used)."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Keep each phase's report on the test item, so that fixtures can see whether it failed."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture
def page(request, browser: Browser, jupyter_lab: JupyterLab, artifacts: Path) -> Iterator[Page]:
    """A fresh browser page; a screenshot if the test failed; then the test's kernels are shut
    down, freeing their CPUs for the next test."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    try:
        yield page
    finally:
        if getattr(request.node, "report_call", None) is None or request.node.report_call.failed:
            page.screenshot(path=artifacts / f"{request.node.name}-FAILED.png")
        context.close()
        jupyter_lab.shutdown_kernels()
