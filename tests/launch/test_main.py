"""The ``distrib-launch`` placeholder: it says it is not implemented and exits with status 2."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from launch.__main__ import NOT_IMPLEMENTED, main

ROOT = Path(__file__).resolve().parents[2]


def test_main_reports_not_implemented_and_exits_2(capsys):
    with pytest.raises(SystemExit) as exc_info:
        main([])
    assert exc_info.value.code == 2
    captured = capsys.readouterr()
    assert captured.err == "distrib-launch: not implemented yet (see the launcher issue)\n"
    assert captured.out == ""


def test_python_dash_m_launch_exits_2():
    result = subprocess.run([sys.executable, "-m", "launch"], cwd=ROOT, capture_output=True, text=True,
                            timeout=60)
    assert (result.returncode, result.stderr.strip()) == (2, NOT_IMPLEMENTED)


def test_console_script_points_at_main():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"distrib-launch": "launch.__main__:main"}
    exe = shutil.which("distrib-launch", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("distrib-launch is not installed next to this interpreter (pip install -e .)")
    result = subprocess.run([exe], capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stderr.strip()) == (2, NOT_IMPLEMENTED)
