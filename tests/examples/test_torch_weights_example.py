"""examples/torch_weights.py: weights trained by torch give the same predictions here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
sys.path.insert(0, str(EXAMPLES))
import datasets  # noqa: E402 - examples/ is not a package on sys.path by default


def _train_in_torch(torch, path: Path):
    """Train the example's architecture in torch for a few steps; save its state dict to ``path``.

    Returns torch's eval-mode logits on the test split.
    """
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(8 * 4 * 4, 10))
    train_x, train_y, test_x, _ = datasets.train_test_split(*datasets.load_digits(), seed=0)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    x, y = torch.from_numpy(train_x).reshape(-1, 1, 8, 8), torch.from_numpy(train_y)
    for step in range(60):
        batch = slice(32 * step % len(y), 32 * step % len(y) + 32)
        loss = torch.nn.functional.cross_entropy(model(x[batch]), y[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    torch.save(model.state_dict(), path)
    model.eval()
    with torch.no_grad():
        return model(torch.from_numpy(test_x).reshape(-1, 1, 8, 8)).numpy()


@pytest.mark.parametrize("mmap", [False, True], ids=["read", "mmap"])
def test_torch_trained_weights_give_the_same_predictions(tmp_path, torch, mmap):
    expected = _train_in_torch(torch, tmp_path / "digits_cnn.pt")
    command = [sys.executable, str(EXAMPLES / "torch_weights.py"), "--weights", str(tmp_path / "digits_cnn.pt"),
               "--predictions", str(tmp_path / "logits.npy"), "--save-as", str(tmp_path / "back.safetensors")]
    result = subprocess.run(command + (["--mmap"] if mmap else []), cwd=ROOT, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert "loaded 9 tensors" in result.stdout
    logits = np.load(tmp_path / "logits.npy")
    assert (logits.argmax(1) == expected.argmax(1)).all()
    np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-5)
    accuracy = float(result.stdout.split("test accuracy: ")[1].split("%")[0])
    assert accuracy > 80.0, result.stdout  # torch's training did learn; we see the same
    from safetensors.torch import load_file

    back = load_file(tmp_path / "back.safetensors")
    original = torch.load(tmp_path / "digits_cnn.pt", weights_only=True)
    assert back.keys() == original.keys() and all(torch.equal(back[k], original[k]) for k in original)
