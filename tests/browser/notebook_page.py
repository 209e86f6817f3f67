"""A lesson open in JupyterLab, driven the way a learner drives it: menus, clicks, Shift+Enter.

Cells are found by their index in the .ipynb file (every cell is in the DOM in JupyterLab's default
"contentVisibility" windowing mode) and progress is read from what the page shows: a cell is done
when its prompt shows an execution count, and a traceback in its output is a failure. (DOM text,
not rendered text: cells scrolled out of view are not rendered, and their innerText is empty.)
"""

import re
import time
from pathlib import Path

import nbformat
from playwright.sync_api import Locator, Page


class CellFailed(AssertionError):
    """A cell showed a traceback, or did not finish in time."""


class NotebookPage:
    def __init__(self, page: Page, url: str, token: str, path: Path):
        self.page, self.url, self.token, self.path = page, url, token, path
        self.sources = [cell.source for cell in nbformat.read(path, as_version=4).cells]

    def open(self, timeout_s: float = 120) -> None:
        """Open the notebook in a fresh workspace and wait for its kernel to be idle."""
        self.page.goto(f"{self.url}/lab/tree/{self.path.name}?token={self.token}&reset")
        self.page.locator(".jp-Notebook .jp-Cell").nth(len(self.sources) - 1).wait_for(
            state="attached", timeout=timeout_s * 1000)
        self.page.locator('.jp-Notebook-ExecutionIndicator[data-status="idle"]').wait_for(
            timeout=timeout_s * 1000)

    def index_of(self, marker: str) -> int:
        """The index of the first cell whose source contains `marker`."""
        return next(i for i, source in enumerate(self.sources) if marker in source)

    def cell(self, index: int) -> Locator:
        return self.page.locator(".jp-Notebook .jp-Cell").nth(index)

    def select(self, index: int) -> None:
        """Click the cell's prompt: selects it in command mode (no editing)."""
        prompt = self.cell(index).locator(".jp-InputPrompt")
        prompt.scroll_into_view_if_needed()
        prompt.click()

    def menu(self, menu: str, item: str) -> None:
        self.page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{menu}$")).click()
        self.page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{re.escape(item)}$")).click()

    def run_up_to(self, index: int, timeout_s: float) -> None:
        """Run every cell above `index` (Run > Run All Above Selected Cell), wait for them, then
        run cell `index` itself with Shift+Enter (its output may keep changing after that)."""
        self.select(index)
        self.menu("Run", "Run All Above Selected Cell")
        self.wait_for_cells(range(index), timeout_s)
        self.select(index)
        self.page.keyboard.press("Shift+Enter")

    def wait_for_cells(self, indices: range, timeout_s: float) -> None:
        """Wait until the code cells in `indices` show an execution count; fail on a traceback."""
        deadline = time.monotonic() + timeout_s
        while True:
            pending = []
            for i in indices:
                cell = self.cell(i)
                if "jp-CodeCell" not in (cell.get_attribute("class") or ""):
                    continue
                outputs = cell.locator(".jp-Cell-outputArea").text_content() or ""
                if "Traceback (most recent call last)" in outputs:
                    raise CellFailed(f"cell {i} of {self.path.name} failed:\n{outputs[-3000:]}")
                if not re.fullmatch(r"\[\d+\]:", cell.locator(".jp-InputPrompt").text_content() or ""):
                    pending.append(i)
            if not pending:
                return
            if time.monotonic() > deadline:
                raise CellFailed(f"cells {pending} of {self.path.name} did not finish in {timeout_s} s")
            time.sleep(1)
