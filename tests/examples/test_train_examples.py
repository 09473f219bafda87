"""The nn training examples run end to end, learn, and resume from checkpoints.

Each example runs as a subprocess (as a user would run it), with small settings
where the full run is not needed; the printed metric is checked (the bad-argument
checks run the scripts as ``__main__`` in the pytest process). Also covers the
helpers they share: the progress bar (tqdm, configured in ``examples/_progress.py``) and the
training-state checkpoints (``examples/checkpoint.py``).
"""

from __future__ import annotations

import io
import math
import os
import re
import runpy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nn
import tensor

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
sys.path.insert(0, str(EXAMPLES))
import checkpoint  # noqa: E402 - examples/ is not a package on sys.path by default
from _progress import Progress  # noqa: E402

ACCURACY = re.compile(r"^test accuracy: (\d+\.\d)%$", re.MULTILINE)
VAL_LOSS = re.compile(r"^val loss: (\d+\.\d+) \((\d+\.\d+) bits per char\)$", re.MULTILINE)
INITIAL_VAL_LOSS = re.compile(r"^initial val loss: (\d+\.\d+)", re.MULTILINE)
BAR_LOSS = re.compile(r"\| *(\d+)/(\d+) \[[^\]]*loss=(\d+\.\d+)")
TIMING = re.compile(r"\[\d\d:\d\d<[^,]*, [^,]* it/s")  # the only part of the output that may vary


def run_example(name: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(EXAMPLES / name), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


def accuracy_of(result: subprocess.CompletedProcess) -> float:
    assert result.returncode == 0, result.stderr
    matches = ACCURACY.findall(result.stdout)
    assert len(matches) == 1, result.stdout
    return float(matches[0])


def model_state(path: Path) -> dict[str, np.ndarray]:
    return {name: t.numpy() for name, t in tensor.load(path)["model"].items()}


# ----------------------------------------------------------------------------- the examples


def test_mlp_digits_default_run_reaches_95_percent_with_plain_progress_lines():
    result = run_example("mlp_digits.py")
    assert accuracy_of(result) >= 95.0, result.stdout
    epoch_lines = [line for line in result.stdout.splitlines() if line.startswith("epoch ")]
    assert len(epoch_lines) == 30 and epoch_lines[-1].startswith("epoch 30/30 |" + "#" * 30 + "| 45/45")
    assert "\r" not in result.stdout  # not a terminal: plain lines, no redraws


@pytest.mark.timeout(600)
def test_cnn_digits_default_run_reaches_97_percent():
    result = run_example("cnn_digits.py", timeout=540)
    assert accuracy_of(result) >= 97.0, result.stdout
    assert "Conv2d(1, 16, kernel_size=(3, 3)" in result.stdout
    assert "epoch 12/12" in result.stdout


def test_cnn_digits_is_deterministic_with_a_fixed_seed():
    first = run_example("cnn_digits.py", "--epochs", "2", "--seed", "3")
    second = run_example("cnn_digits.py", "--epochs", "2", "--seed", "3")
    other_seed = run_example("cnn_digits.py", "--epochs", "2", "--seed", "4")
    assert accuracy_of(first) > 50.0  # two epochs already learn something
    assert TIMING.sub("", first.stdout) == TIMING.sub("", second.stdout)
    assert TIMING.sub("", first.stdout) != TIMING.sub("", other_seed.stdout)


def test_char_model_loss_decreases_and_reports_bits_per_char_and_a_sample():
    result = run_example("char_model.py", "--steps", "60", "--eval-every", "20", "--sample-length", "40")
    assert result.returncode == 0, result.stderr
    bar = [(int(done), float(loss)) for done, _, loss in BAR_LOSS.findall(result.stdout)]
    assert [done for done, _ in bar] == [20, 40, 60]
    losses = [loss for _, loss in bar]
    assert losses == sorted(losses, reverse=True) and losses[-1] < losses[0], result.stdout
    (initial,) = INITIAL_VAL_LOSS.findall(result.stdout)
    ((nats, bits),) = VAL_LOSS.findall(result.stdout)
    assert float(nats) < float(initial) - 0.5, result.stdout
    assert float(bits) == pytest.approx(float(nats) / math.log(2), abs=1e-3)
    sample = result.stdout.split("sample:\n", 1)[1]
    assert sample.startswith('The "') and len(sample.rstrip("\n")) >= 40


def test_mlp_checkpoint_resume_round_trip_matches_uninterrupted_run(tmp_path):
    full = run_example("mlp_digits.py", "--epochs", "4", "--checkpoint", str(tmp_path / "full.ckpt"))
    first = run_example("mlp_digits.py", "--epochs", "4", "--stop-after", "2",
                        "--checkpoint", str(tmp_path / "split.ckpt"))
    assert first.returncode == 0, first.stderr
    assert "stopping after epoch 2 of 4" in first.stdout and "epoch 3/4" not in first.stdout
    assert tensor.load(tmp_path / "split.ckpt")["epoch"] == 2
    second = run_example("mlp_digits.py", "--epochs", "4", "--resume", "--checkpoint", str(tmp_path / "split.ckpt"))
    assert "resumed from" in second.stdout and "after epoch 2 (step 90)" in second.stdout
    assert "epoch 2/4" not in second.stdout and "epoch 4/4" in second.stdout
    assert accuracy_of(second) == accuracy_of(full)
    full_state, resumed_state = model_state(tmp_path / "full.ckpt"), model_state(tmp_path / "split.ckpt")
    assert full_state.keys() == resumed_state.keys()
    assert all(np.array_equal(full_state[k], resumed_state[k]) for k in full_state)


def test_char_model_checkpoint_resume_round_trip_matches_uninterrupted_run(tmp_path):
    common = ["--steps", "20", "--eval-every", "10", "--sample-length", "0"]
    run_example("char_model.py", *common, "--checkpoint", str(tmp_path / "full.ckpt"))
    run_example("char_model.py", *common, "--stop-after", "10", "--checkpoint", str(tmp_path / "split.ckpt"))
    resumed = run_example("char_model.py", *common, "--resume", "--checkpoint", str(tmp_path / "split.ckpt"))
    assert resumed.returncode == 0, resumed.stderr
    assert "resumed from" in resumed.stdout and "at step 10" in resumed.stdout
    full_state, resumed_state = model_state(tmp_path / "full.ckpt"), model_state(tmp_path / "split.ckpt")
    assert all(np.array_equal(full_state[k], resumed_state[k]) for k in full_state)


@pytest.mark.parametrize("script, args, code, message", [
    ("mlp_digits.py", ["--resume"], 2, "--resume needs --checkpoint PATH"),
    ("cnn_digits.py", ["--epochs", "0"], 2, "--epochs, --batch-size and --channels must be >= 1 and --lr > 0"),
    ("cnn_digits.py", ["--resume", "--checkpoint", "no/such.ckpt"], 2, "--resume: no checkpoint at no/such.ckpt"),
    ("char_model.py", ["--d-model", "30", "--heads", "4"], 2, "--d-model (30) must be divisible by --heads (4)"),
    ("char_model.py", ["--dropout", "1.0"], 2, "--dropout must be in [0, 1), got 1.0"),
])
def test_examples_reject_bad_arguments(script, args, code, message, monkeypatch, capsys):
    # Run as __main__ in this process: the code path of ``python examples/<script>``, without
    # an interpreter start per case. The scripts' setdefault of the BLAS threads changes nothing.
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        monkeypatch.setenv(name, os.environ.get(name, "1"))
    monkeypatch.setattr(sys, "argv", [str(EXAMPLES / script), *args])
    with pytest.raises(SystemExit) as exited:
        runpy.run_path(str(EXAMPLES / script), run_name="__main__")
    assert exited.value.code == code
    assert message in capsys.readouterr().err


def test_resume_with_different_settings_is_refused(tmp_path):
    path = str(tmp_path / "mlp.ckpt")
    assert run_example("mlp_digits.py", "--epochs", "1", "--checkpoint", path).returncode == 0
    result = run_example("mlp_digits.py", "--epochs", "3", "--lr", "0.1", "--checkpoint", path, "--resume")
    assert result.returncode == 1
    assert "was made with different settings: epochs=1 (now 3), lr=0.05 (now 0.1)" in result.stderr


# ----------------------------------------------------------------------------- examples/checkpoint.py


def small_training_state():
    tensor.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.Linear(4, 2))
    optimizer = nn.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = nn.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    model(tensor.randn(3, 4)).sum().backward()
    optimizer.step()
    scheduler.step()
    return model, optimizer, scheduler


def test_checkpoint_helpers_restore_everything_and_return_the_counters(tmp_path):
    model, optimizer, scheduler = small_training_state()
    path = tmp_path / "state.ckpt"
    checkpoint.save_checkpoint(path, model, optimizer, scheduler, epoch=3, step=30, config={"lr": 0.1}, note="hi")
    expected_next = tensor.rand(5).numpy()

    fresh_model, fresh_optimizer, fresh_scheduler = small_training_state()
    info = checkpoint.load_checkpoint(path, fresh_model, fresh_optimizer, fresh_scheduler)
    assert info == {"epoch": 3, "step": 30, "config": {"lr": 0.1}, "extra": {"note": "hi"}}
    assert np.array_equal(tensor.rand(5).numpy(), expected_next)  # the RNG continues where it was saved
    for a, b in zip(model.parameters(), fresh_model.parameters()):
        assert np.array_equal(a.detach().numpy(), b.detach().numpy())
    assert fresh_scheduler.last_epoch == 1 and fresh_optimizer.param_groups[0]["lr"] == 0.05
    assert np.array_equal(fresh_optimizer.state[next(fresh_model.parameters())]["momentum_buffer"].numpy(),
                          optimizer.state[next(model.parameters())]["momentum_buffer"].numpy())


def test_load_checkpoint_rejects_other_files_and_a_scheduler_mismatch(tmp_path):
    model, optimizer, scheduler = small_training_state()
    tensor.save({"weights": tensor.zeros(2)}, tmp_path / "other.ckpt")
    with pytest.raises(RuntimeError, match=r"other.ckpt: not a training checkpoint \(expected format "
                                           r"'distrib-examples-checkpoint/1'\)"):
        checkpoint.load_checkpoint(tmp_path / "other.ckpt", model, optimizer, scheduler)
    checkpoint.save_checkpoint(tmp_path / "no_sched.ckpt", model, optimizer, epoch=1)
    with pytest.raises(ValueError, match="checkpoint has no LR scheduler state but one was given"):
        checkpoint.load_checkpoint(tmp_path / "no_sched.ckpt", model, optimizer, scheduler)


# ----------------------------------------------------------------------------- examples/_progress.py


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_prints_evenly_spaced_plain_lines_off_a_terminal():
    out = io.StringIO()
    with Progress(10, desc="epoch 1/2", stream=out, lines=5) as bar:
        for step in range(10):
            bar.update(loss=1.0 / (step + 1))
        bar.set_postfix(test_acc="97.5%")
    lines = out.getvalue().splitlines()
    assert [re.search(r"\| *(\d+)/10", line).group(1) for line in lines] == ["2", "4", "6", "8", "10"]
    assert lines[-1].startswith("epoch 1/2 |" + "#" * 30 + "| 10/10 [")
    assert lines[-1].endswith("loss=0.1000, test_acc=97.5%]") and "it/s" in lines[-1]
    assert "\r" not in out.getvalue()


def test_progress_redraws_one_line_on_a_terminal():
    out = FakeTerminal()
    bar = Progress(4, stream=out)
    assert bar.live
    for _ in range(4):
        bar.update(loss=0.5)
    bar.close()
    bar.close()  # idempotent
    text = out.getvalue()
    assert text.count("\n") == 1 and text.endswith("]\n") and text.startswith("\r|")
    assert "4/4" in text.rsplit("\r", 1)[1]


def test_progress_is_silent_when_disabled():
    out = io.StringIO()
    with Progress(4, desc="epoch 1/1", stream=out, lines=4, disable=True) as bar:
        for _ in range(4):
            bar.update(loss=0.5)
    assert out.getvalue() == ""


@pytest.mark.parametrize("kwargs, message", [
    ({"total": 0}, "total must be >= 1, got 0"),
    ({"total": 5, "lines": 0}, "lines must be >= 1, got 0"),
])
def test_progress_rejects_bad_sizes(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Progress(stream=io.StringIO(), **kwargs)
