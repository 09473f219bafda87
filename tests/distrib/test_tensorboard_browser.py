"""A headless Chromium shows an exported Chrome trace (chrome://tracing) and TensorBoard's scalar
page for SummaryWriter's logs (marked slow).

Runs only where Chromium is installed at /usr/bin/chromium (CI machines have none by default;
nothing installs it) and playwright is importable; otherwise it is skipped with the reason.
The screenshot is kept next to the logs (``scalars.png``) and checked to be non-blank.
"""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys

import pytest

from tests.helpers import wait_until

CHROMIUM = "/usr/bin/chromium"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(180),
    pytest.mark.skipif(
        not os.path.exists(CHROMIUM),
        reason=f"no browser: Chromium is not installed at {CHROMIUM} (the README says how to view "
        "traces and logs without one)",
    ),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_tensorboard_scalar_page_renders_the_logged_curve(tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api", reason="the browser check needs pip install playwright")
    image = pytest.importorskip("PIL.Image", reason="checking the screenshot needs Pillow")
    pytest.importorskip("tensorboard", reason="the scalar page needs tensorboard (the test extra)")
    from distrib.utils.tensorboard import SummaryWriter

    with SummaryWriter(str(tmp_path / "run")) as writer:
        for step in range(20):
            writer.add_scalar("loss", 1.0 / (step + 1), step)
    port = _free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tensorboard.main",
            "--logdir",
            str(tmp_path),
            "--port",
            str(port),
            "--host",
            "127.0.0.1",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert wait_until(lambda: _listening(port), timeout=60), "tensorboard did not start listening"
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=CHROMIUM,
                args=[
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-background-networking",
                    "--no-first-run",
                ],
            )
            try:
                page = browser.new_page(viewport={"width": 1200, "height": 800})
                page.goto(f"http://127.0.0.1:{port}/#scalars", timeout=60_000)
                page.wait_for_selector("text=loss", timeout=60_000)
                png = page.screenshot(path=str(tmp_path / "scalars.png"))
            finally:
                browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    colours = image.open(io.BytesIO(png)).convert("L").getcolors(maxcolors=1 << 16)
    assert colours is None or len(colours) > 10, "the screenshot is blank"


def test_chrome_tracing_renders_an_exported_trace(tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api", reason="the browser check needs pip install playwright")
    image = pytest.importorskip("PIL.Image", reason="checking the screenshot needs Pillow")
    import tensor
    from tensor.profiler import profile, record_function

    with profile() as prof:
        with record_function("work"):
            (tensor.ones(64, 64) @ tensor.ones(64, 64)).sum()
    trace = prof.export_chrome_trace(str(tmp_path / "trace.json"))
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
        )
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 800})
            page.goto("chrome://tracing", timeout=60_000)
            page.set_input_files("input[type=file]", trace)  # the Load button's input (in a shadow root)
            page.wait_for_selector("text=work", timeout=60_000)
            png = page.screenshot(path=str(tmp_path / "trace.png"))
        finally:
            browser.close()
    colours = image.open(io.BytesIO(png)).convert("L").getcolors(maxcolors=1 << 16)
    assert colours is None or len(colours) > 10, "the screenshot is blank"
