"""examples/fsdp_train.py under distrib-launch (2 processes): trains, checkpoints with
distrib.checkpoint, and a run stopped half-way then resumed ends with the validation loss of an
uninterrupted run."""

from __future__ import annotations

import os
import re

import pytest

from tests.distrib._harness import ROOT, shm_entries
from tests.distrib.test_ddp_example import launcher, run

SCRIPT = os.path.join(ROOT, "examples", "fsdp_train.py")
VAL_LOSS = re.compile(r"^\[rank0\]:val loss: (\d+\.\d+)", re.MULTILINE)
SMALL = ["--steps", "4", "--eval-every", "2", "--d-model", "32", "--block-size", "16", "--batch-size", "4"]


def val_loss(output: str) -> float:
    found = VAL_LOSS.findall(output)
    assert found, f"no 'val loss' line in:\n{output[-4000:]}"
    return float(found[-1])


@pytest.mark.slow
def test_stopped_and_resumed_run_matches_an_uninterrupted_one(tmp_path):
    before = shm_entries()
    whole = run([*launcher(), "--nproc", "2", SCRIPT, *SMALL, "--out-dir", str(tmp_path / "a")], timeout=240)
    assert whole.returncode == 0, whole.stdout[-4000:]
    first = run(
        [*launcher(), "--nproc", "2", SCRIPT, *SMALL, "--stop-after", "2", "--out-dir", str(tmp_path / "b")],
        timeout=240,
    )
    assert first.returncode == 0, first.stdout[-4000:]
    resumed = run(
        [*launcher(), "--nproc", "2", SCRIPT, *SMALL, "--resume", "--out-dir", str(tmp_path / "b")], timeout=240
    )
    assert resumed.returncode == 0, resumed.stdout[-4000:]
    assert "resumed from" in resumed.stdout and "at step 2" in resumed.stdout
    assert val_loss(resumed.stdout) == val_loss(whole.stdout)
    assert val_loss(first.stdout) != val_loss(whole.stdout)
    assert shm_entries() - before == set()
