"""The built book (`make book`, _build/html) in headless Chromium: every page opened from a loopback
server, with no broken internal link or anchor, no missing image, no JavaScript error and no request
leaving the machine; every lesson page shows each plot of its run and says where that run was; the
search finds lessons. `make test-book` runs this after the book is built (`make test` does both);
screenshots of three pages are kept in test-artifacts/browser/book/.
"""

import contextlib
import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlparse

import nbformat
import pytest
from playwright.sync_api import Browser, Page
from playwright.sync_api import TimeoutError as PlaywrightTimeout

ROOT = Path(__file__).resolve().parents[2]
HTML, SOURCE = ROOT / "_build" / "html", ROOT / "_build" / "book-src"

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def book_url() -> Iterator[str]:
    """The built book served on a free loopback port, as `make book-serve` serves it."""
    if not (HTML / "index.html").exists():
        pytest.fail(f"no book in {HTML}: build it first (`make book`)")
    handler = functools.partial(QuietHandler, directory=str(HTML))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        yield f"http://127.0.0.1:{server.server_address[1]}/"
        server.shutdown()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args) -> None:
        pass


def pages() -> list[str]:
    return sorted(str(p.relative_to(HTML)) for p in HTML.rglob("*.html")
                  if not p.relative_to(HTML).parts[0].startswith("_"))


def plots_in_run(page: str) -> int:
    """How many images the lesson's run drew (its executed copy, as staged for the book)."""
    notebook = nbformat.read(SOURCE / Path(page).with_suffix(".ipynb"), as_version=4)
    return sum("image/png" in data and "text/html" not in data  # HTML comes first when both exist
               for data in (output.get("data", {}) for cell in notebook.cells
                            for output in cell.get("outputs", [])))


def visit(page: Page, url: str, problems: list[str]) -> None:
    """Open `url` and wait until its images are loaded; what went wrong goes to `problems`."""
    page.goto(url, wait_until="load")
    with contextlib.suppress(PlaywrightTimeout):  # MathJax's fonts, when the machine is busy
        page.wait_for_load_state("networkidle", timeout=15_000)
    for src in page.eval_on_selector_all(
            "img", "imgs => imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)"):
        problems.append(f"{url}: image not shown: {src[:100]}")


def test_every_page_of_the_book(browser: Browser, book_url: str, artifacts: Path):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page, problems, ids, links = context.new_page(), [], {}, set()
    page.on("pageerror", lambda error: problems.append(f"{page.url}: JavaScript error: {error}"))
    page.on("console", lambda msg: msg.type == "error" and problems.append(
        f"{page.url}: console error: {msg.text}"))
    page.on("response", lambda response: response.status >= 400 and problems.append(
        f"{page.url}: {response.status} for {response.url}"))

    def local_only(route):  # the book must read offline: nothing may be fetched from outside
        if urlparse(route.request.url).hostname == "127.0.0.1":
            return route.continue_()
        problems.append(f"{page.url}: request leaving the machine: {route.request.url}")
        return route.abort()

    page.route("**/*", local_only)
    names = pages()
    lessons = [name for name in names if name.startswith("lessons/")]
    assert len(lessons) == len(list((ROOT / "lessons").glob("[0-9][0-9]_*.ipynb"))), names
    for name in names:
        url = urljoin(book_url, name)
        visit(page, url, problems)
        ids[url] = set(page.eval_on_selector_all("[id]", "nodes => nodes.map(n => n.id)"))
        links.update(urljoin(url, href) for href in page.eval_on_selector_all(
            "a[href]", "links => links.map(a => a.getAttribute('href'))"))
        if name in lessons:
            shown = page.locator(".cell_output img").evaluate_all(
                "imgs => imgs.filter(i => i.complete && i.naturalWidth > 0).length")
            if shown < plots_in_run(name):
                problems.append(f"{name}: {shown} of its run's {plots_in_run(name)} plots shown")
            if "The outputs on this page come from one run" not in page.inner_text("main"):
                problems.append(f"{name}: does not say where its outputs came from")
        if name in ("index.html", "lessons/01_ray_and_rl_basics.html"):
            page.screenshot(path=artifacts / f"book-{Path(name).stem}.png", full_page=False)

    for link in sorted(links):
        target, fragment = urldefrag(link)
        if urlparse(target).hostname != "127.0.0.1":
            continue  # Binder, GitHub, papers: outside links are not followed offline
        target = target if not target.endswith("/") else target + "index.html"
        if target not in ids:
            path = HTML / urlparse(target).path.lstrip("/")
            if not path.is_file():
                problems.append(f"broken internal link: {link}")
        elif fragment and fragment not in ids[target]:
            problems.append(f"broken anchor: {link}")

    visit(page, urljoin(book_url, "search.html?q=EnvRunner"), problems)
    results = page.locator("#search-results a")
    results.first.wait_for(timeout=30_000)
    found = {urldefrag(href)[0].rsplit("/", 1)[-1] for href in
             results.evaluate_all("links => links.map(a => a.getAttribute('href'))")}
    page.screenshot(path=artifacts / "book-search.png")
    assert any(name.endswith(".html") and name[:2].isdigit() for name in found), found
    context.close()
    print(f"the book: {len(names)} pages opened, {len(links)} distinct links checked")
    assert not problems, "\n".join(problems)
