"""Shared fixtures: the device matrix and the optional torch oracle.

Every test that takes the ``device`` fixture runs on the CPU and, where a CUDA
device exists, again on ``cuda`` (those runs carry the ``gpu`` marker and are
skipped, with the reason shown, elsewhere).
"""

from __future__ import annotations

import resource

import pytest

import tensor

# ---- the CuPy stand-in switch (issue 13; tests/_cupy_standin/README.md) --------------------------
from tests._cupy_standin import enable_if_requested  # before the CUDA probe below

CUPY_STANDIN = enable_if_requested()
# ---- end of the stand-in switch ----------------------------------------------------------------


def _cuda_skip_reason() -> str | None:
    if tensor.cuda.is_available():
        return None
    try:
        tensor._backend.check_cuda_available()
    except RuntimeError as exc:
        return str(exc).split(". help:")[0]
    return "CUDA is not available"


CUDA_SKIP_REASON = _cuda_skip_reason()


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def device(request) -> str:
    """The device to run on: 'cpu', and 'cuda' where a GPU exists."""
    if request.param == "cuda" and CUDA_SKIP_REASON:
        pytest.skip(f"no CUDA device: {CUDA_SKIP_REASON}")
    return request.param


@pytest.fixture
def torch():
    """The torch module, when installed as a test oracle (skips otherwise)."""
    return pytest.importorskip("torch", reason="torch is not installed (optional test oracle)")


@pytest.fixture(autouse=True)
def _fixed_seed():
    tensor.manual_seed(0)
    yield


def pytest_terminal_summary(terminalreporter) -> None:
    """Show the peak memory of the run (the pytest process should stay under 2 GB), then every
    skip reason once, with its count (the cuda runs alone are hundreds of lines)."""
    # ru_maxrss is in kB on Linux; children: the largest subprocess the run waited for (a rank)
    own, child = (resource.getrusage(who).ru_maxrss >> 10 for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    terminalreporter.line(f"peak RSS: {own} MB in the pytest process, {child} MB in its largest subprocess")
    reasons: dict[str, int] = {}
    for report in terminalreporter.stats.get("skipped", []):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        reasons[reason] = reasons.get(reason, 0) + 1
    if reasons:
        terminalreporter.section("skip reasons")
        for reason, count in sorted(reasons.items(), key=lambda item: -item[1]):
            terminalreporter.line(f"{count:6d} skipped: {reason}")
