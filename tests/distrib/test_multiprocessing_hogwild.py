"""examples/hogwild.py: N processes train one shared model without locks and it learns."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOGWILD = ROOT / "examples" / "hogwild.py"


def _run(*args, timeout=120):
    return subprocess.run([sys.executable, str(HOGWILD), *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def test_two_processes_reach_95_percent_with_their_own_blas_threads():
    result = _run("--num-processes", "2", "--threads", "2")
    assert result.returncode == 0, result.stderr
    processes = re.findall(r"^process (\d): 14380 samples in .*, (\d+) BLAS threads$", result.stdout, re.MULTILINE)
    assert processes == [("0", "1"), ("1", "1")], result.stdout  # 2 threads split between 2 processes
    accuracy = re.findall(r"^test accuracy: (\d+\.\d)%$", result.stdout, re.MULTILINE)
    assert len(accuracy) == 1 and float(accuracy[0]) >= 95.0, result.stdout


def test_bad_arguments_are_refused():
    result = _run("--num-processes", "0", timeout=60)
    assert result.returncode == 2
    assert "--num-processes, --epochs, --batch-size, --hidden and --threads must be >= 1" in result.stderr
