"""Checkpoints resume training bit-identically, and are written atomically.

Training N steps, saving the model, optimizer, LR scheduler and RNG state with
``tensor.save``, loading them in a fresh process and training M more steps must
give parameters bit-identical (``np.array_equal``) to an uninterrupted N+M-step
run on CPU with a fixed seed. The model has dropout and the batches are drawn
with ``tensor.randperm``, so the RNG state matters; control runs that leave out
one piece of the state (RNG, optimizer, scheduler) must diverge, which shows each
piece is needed and that the comparison can fail.

The fresh process runs this file as a module: ``python -m tests.nn.test_checkpoint_resume``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nn
import nn.functional as F
import tensor

ROOT = Path(__file__).resolve().parents[2]
SEED = 1234
STEPS_BEFORE, STEPS_AFTER = 7, 6
OPTIMIZERS = ("sgd_momentum", "adam")
LEFT_OUT = ("rng", "optimizer", "scheduler")  # control runs: resume without this piece


def build(optimizer_name: str):
    """A fresh seeded model with dropout, its optimizer and a StepLR schedule."""
    tensor.manual_seed(SEED)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 3))
    if optimizer_name == "sgd_momentum":
        optimizer = nn.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-3)
    else:
        optimizer = nn.optim.Adam(model.parameters(), lr=0.01)
    scheduler = nn.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
    return model, optimizer, scheduler


def train(model, optimizer, scheduler, steps: int) -> None:
    """``steps`` SGD steps on random mini-batches of a fixed synthetic data set."""
    data = np.random.default_rng(0)
    x = tensor.from_numpy(data.standard_normal((64, 8)).astype(np.float32))
    y = tensor.from_numpy(data.integers(0, 3, 64))
    model.train()
    for _ in range(steps):
        batch = tensor.randperm(64)[:16]
        loss = F.cross_entropy(model(x[batch]), y[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()


def save_training_state(path, model, optimizer, scheduler) -> None:
    tensor.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                 "scheduler": scheduler.state_dict(), "rng_state": tensor.get_rng_state()}, path)


def resume(path, optimizer_name: str, left_out: str | None = None):
    """Rebuild from scratch (as a new run would) and load the state, except ``left_out``."""
    model, optimizer, scheduler = build(optimizer_name)
    state = tensor.load(path)  # the safe default, weights_only=True
    model.load_state_dict(state["model"])
    if left_out != "optimizer":
        optimizer.load_state_dict(state["optimizer"])
    if left_out != "scheduler":
        scheduler.load_state_dict(state["scheduler"])
    if left_out != "rng":
        tensor.set_rng_state(state["rng_state"])
    return model, optimizer, scheduler


def parameters(model) -> dict[str, np.ndarray]:
    return {name: p.detach().numpy().copy() for name, p in model.named_parameters()}


def bit_identical(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def resume_in_fresh_process(optimizer_name: str, checkpoint: Path, out_dir: Path) -> None:
    """In a new interpreter: resume (plus one control run per left-out piece), train, save params."""
    result = subprocess.run(
        [sys.executable, "-m", "tests.nn.test_checkpoint_resume", optimizer_name, str(checkpoint), str(out_dir)],
        cwd=ROOT, capture_output=True, text=True, timeout=90,
    )
    assert result.returncode == 0, result.stderr


def load_parameters(path: Path) -> dict[str, np.ndarray]:
    return {name: t.numpy() for name, t in tensor.load(path).items()}


@pytest.mark.parametrize("optimizer_name", OPTIMIZERS)
def test_resume_in_fresh_process_is_bit_identical_to_uninterrupted_run(optimizer_name, tmp_path):
    model, optimizer, scheduler = build(optimizer_name)
    train(model, optimizer, scheduler, STEPS_BEFORE + STEPS_AFTER)
    uninterrupted = parameters(model)

    model, optimizer, scheduler = build(optimizer_name)
    train(model, optimizer, scheduler, STEPS_BEFORE)
    at_checkpoint = parameters(model)
    save_training_state(tmp_path / "run.ckpt", model, optimizer, scheduler)

    resume_in_fresh_process(optimizer_name, tmp_path / "run.ckpt", tmp_path)
    resumed = load_parameters(tmp_path / "resumed.ckpt")
    assert bit_identical(resumed, uninterrupted)
    assert not bit_identical(resumed, at_checkpoint)  # the resumed run did train
    for piece in LEFT_OUT:  # leaving out any piece of the state breaks the guarantee
        assert not bit_identical(load_parameters(tmp_path / f"without_{piece}.ckpt"), uninterrupted), piece


def test_checkpoint_holds_only_safe_values(tmp_path):
    model, optimizer, scheduler = build("adam")
    train(model, optimizer, scheduler, 2)
    save_training_state(tmp_path / "run.ckpt", model, optimizer, scheduler)
    state = tensor.load(tmp_path / "run.ckpt", weights_only=True)
    assert sorted(state) == ["model", "optimizer", "rng_state", "scheduler"]
    assert state["scheduler"]["last_epoch"] == 2
    assert set(state["optimizer"]["state"][0]) == {"step", "exp_avg", "exp_avg_sq"}


def test_failed_save_leaves_old_checkpoint_intact_and_no_temporary_file(tmp_path, monkeypatch):
    model, optimizer, scheduler = build("sgd_momentum")
    train(model, optimizer, scheduler, 2)
    path = tmp_path / "run.ckpt"
    save_training_state(path, model, optimizer, scheduler)
    old_bytes, old_params = path.read_bytes(), parameters(model)
    train(model, optimizer, scheduler, 2)

    def disk_full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError, match="No space left on device"):
        save_training_state(path, model, optimizer, scheduler)
    monkeypatch.undo()
    assert path.read_bytes() == old_bytes
    assert os.listdir(tmp_path) == ["run.ckpt"]
    assert bit_identical({k: v.numpy() for k, v in tensor.load(path)["model"].items()}, old_params)


CRASH_MID_WRITE = """
import os, sys
import tensor
from tests.nn.test_checkpoint_resume import build, save_training_state, train

model, optimizer, scheduler = build("adam")
train(model, optimizer, scheduler, 3)
real_fdopen = os.fdopen

class DiesHalfwayThrough:
    def __init__(self, f):
        self.f = f
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        return False
    def write(self, data):
        self.f.write(data[: len(data) // 2])
        self.f.flush()
        os._exit(3)  # like kill -9 or a power cut: no cleanup, no exception handlers

os.fdopen = lambda fd, mode: DiesHalfwayThrough(real_fdopen(fd, mode))
save_training_state(sys.argv[1], model, optimizer, scheduler)
"""


def test_crash_mid_save_in_another_process_leaves_old_checkpoint_loadable(tmp_path):
    model, optimizer, scheduler = build("adam")
    train(model, optimizer, scheduler, 1)
    path = tmp_path / "run.ckpt"
    save_training_state(path, model, optimizer, scheduler)
    old_bytes = path.read_bytes()

    result = subprocess.run([sys.executable, "-c", CRASH_MID_WRITE, str(path)], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 3, result.stderr
    leftovers = [name for name in os.listdir(tmp_path) if name != "run.ckpt"]
    assert len(leftovers) == 1 and leftovers[0].startswith(".run.ckpt.")  # the half-written temp file
    with pytest.raises(RuntimeError, match="truncated|corrupt"):
        tensor.load(tmp_path / leftovers[0])
    assert path.read_bytes() == old_bytes
    assert tensor.load(path)["scheduler"]["last_epoch"] == 1


def _fresh_process_main(optimizer_name: str, checkpoint: str, out_dir: str) -> None:
    for left_out in (None, *LEFT_OUT):
        model, optimizer, scheduler = resume(checkpoint, optimizer_name, left_out)
        train(model, optimizer, scheduler, STEPS_AFTER)
        name = "resumed" if left_out is None else f"without_{left_out}"
        tensor.save({name: p.detach() for name, p in model.named_parameters()}, os.path.join(out_dir, f"{name}.ckpt"))


if __name__ == "__main__":
    _fresh_process_main(*sys.argv[1:4])
