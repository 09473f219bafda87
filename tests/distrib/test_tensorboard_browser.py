"""A headless Chromium renders TensorBoard's scalar page for SummaryWriter's logs and a 2-rank job's
merged timeline (marked slow).

TensorBoard runs as a local server on 127.0.0.1. The timeline cannot go to ui.perfetto.dev (a remote
site; the test machines have no network) and chrome://tracing's legacy viewer does not load
reliably headless, so it is drawn by ``tests/_trace_viewer.html``, a minimal self-contained viewer
served from 127.0.0.1 (one band per rank, a lane per thread); users open the JSON in Perfetto or
chrome://tracing. Each screenshot is checked to be non-blank; with
``DISTRIB_SAVE_SCREENSHOTS=docs/images`` they are also saved there (``tensorboard_scalars.png``,
``timeline.png``: the README's screenshots).

Runs only where Chromium is at /usr/bin/chromium (``apt-get install chromium``) and playwright is
importable (``pip install playwright``; its own browser download is not used); otherwise skipped
with the reason. CI installs neither.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import io
import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.helpers import wait_until
from tests.launch.conftest import clean_env, run_launch, write_script
from tests.launch.test_timeline import TRAIN

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="the browser check needs pip install playwright (and apt-get install chromium)"
)

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
VIEWER = ROOT / "tests" / "_trace_viewer.html"
VIEWPORT = {"width": 1000, "height": 600}
pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(180),
    pytest.mark.skipif(
        not os.path.exists(CHROMIUM),
        reason=f"no browser: Chromium is not at {CHROMIUM} (apt-get install chromium; and pip install playwright)",
    ),
]


@contextlib.contextmanager
def _page(tmp_path: Path):
    """A page of a headless Chromium with a fresh profile, no network beyond loopback; closed after."""
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"),
            executable_path=CHROMIUM,
            headless=True,
            viewport=VIEWPORT,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        try:
            yield browser.new_page()
        finally:
            browser.close()


def _check_and_keep(png: bytes, name: str) -> None:
    """Assert the screenshot is not blank (many colours, mostly not the background); save it as
    ``name`` under $DISTRIB_SAVE_SCREENSHOTS when that is set."""
    image = pytest.importorskip("PIL.Image", reason="checking the screenshot needs Pillow").open(io.BytesIO(png))
    rgb = image.convert("RGB")
    colours = rgb.getcolors(maxcolors=1 << 20)
    assert len(colours) > 20, f"the screenshot has only {len(colours)} colours"
    background = max(colours)[0]
    assert background < 0.98 * rgb.width * rgb.height, "the screenshot is almost all one colour"
    if out := os.environ.get("DISTRIB_SAVE_SCREENSHOTS"):
        path = ROOT / out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        image.save(path, optimize=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_tensorboard_scalar_page_renders_the_logged_curves(tmp_path):
    pytest.importorskip("tensorboard", reason="the scalar page needs tensorboard (the test extra)")
    from distrib.utils.tensorboard import SummaryWriter

    logdir = tmp_path / "logs"
    with SummaryWriter(str(logdir / "run")) as writer:
        for step in range(50):
            writer.add_scalar("train/loss", 2.0 / (step + 1) + 0.05 * (step % 3), step)
            writer.add_scalar("train/accuracy", 1.0 - 0.9 / (1 + 0.2 * step), step)
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert wait_until(lambda: _listening(port), timeout=60), "tensorboard did not start listening"
        with _page(tmp_path) as page:
            page.goto(f"http://127.0.0.1:{port}/#scalars", timeout=60_000)
            page.wait_for_selector("text=train/loss", timeout=60_000)
            page.wait_for_selector("text=train/accuracy", timeout=60_000)
            # each tag's card draws its curve as an SVG path (CSS selectors pierce the shadow roots)
            cards = page.locator("tf-scalar-card")
            cards.nth(1).wait_for(state="visible", timeout=60_000)
            for card in cards.all():
                line = card.locator("path.line").first
                line.wait_for(state="visible", timeout=60_000)
                box = line.bounding_box()
                assert box["width"] > 100 and box["height"] > 50, f"a curve drawn in {box}"
            png = page.screenshot()
    finally:
        server.terminate()
        server.wait(timeout=30)
    _check_and_keep(png, "tensorboard_scalars.png")


def test_merged_timeline_renders_one_row_per_rank(tmp_path):
    script = write_script(tmp_path, "train.py", TRAIN)
    site = tmp_path / "site"
    site.mkdir()
    proc = run_launch("--nproc", 2, "--timeline", site / "trace.json", script, env=clean_env(), timeout=90)
    assert proc.returncode == 0, proc.stderr[-4000:]
    shutil.copy(VIEWER, site / "index.html")
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with _page(tmp_path) as page:
            page.goto(f"http://127.0.0.1:{server.server_port}/index.html", timeout=60_000)
            page.wait_for_selector("body[data-rendered], body[data-error]", state="attached", timeout=60_000)
            body = page.eval_on_selector("body", "b => Object.assign({}, b.dataset)")
            png = page.locator("body").screenshot()  # the legend and the drawing, not the empty rest
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=30)
    assert "error" not in body, body["error"]
    assert body["rows"] == "rank 0 of 2|rank 1 of 2"
    assert int(body["events"]) > 50
    _check_and_keep(png, "timeline.png")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the viewer and the trace without logging each request to stderr."""

    def log_message(self, format, *args) -> None:
        pass
