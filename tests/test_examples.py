"""The examples run end to end and learn: softmax regression on the bundled digits.

Also checks the bundled data set and its split helper, which the examples rely on.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

sys.path.insert(0, str(EXAMPLES))
import datasets  # noqa: E402 - examples/ is not a package on sys.path by default

ACCURACY_LINE = re.compile(r"^test accuracy: (\d+(?:\.\d+)?)%$", re.MULTILINE)


def test_load_digits_shapes_dtypes_and_range():
    images, labels = datasets.load_digits()
    assert (images.shape, images.dtype) == ((1797, 64), np.float32)
    assert (labels.shape, labels.dtype) == ((1797,), np.int64)
    assert images.min() == 0.0 and images.max() == 1.0
    assert np.array_equal(np.unique(images * 16), np.arange(17))  # 0..16 scaled by 1/16
    assert np.bincount(labels).tolist() == [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]


def test_train_test_split_is_deterministic_disjoint_and_complete():
    images, labels = datasets.load_digits()
    first = datasets.train_test_split(images, labels, seed=3)
    again = datasets.train_test_split(images, labels, seed=3)
    other = datasets.train_test_split(images, labels, seed=4)
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert not np.array_equal(first[3], other[3])
    train_x, train_y, test_x, test_y = first
    assert (len(train_x), len(test_x)) == (1438, 359)
    rows = {row.tobytes() for row in train_x} | {row.tobytes() for row in test_x}
    assert len(rows) == len({row.tobytes() for row in images})
    assert sorted(np.concatenate([train_y, test_y]).tolist()) == sorted(labels.tolist())


@pytest.mark.parametrize("kwargs, error, message", [
    ({"test_fraction": 0.0}, ValueError, r"test_fraction must be in \(0, 1\), got 0.0"),
    ({"test_fraction": 1.5}, ValueError, r"test_fraction must be in \(0, 1\), got 1.5"),
])
def test_train_test_split_rejects_bad_fractions(kwargs, error, message):
    images, labels = datasets.load_digits()
    with pytest.raises(error, match=message):
        datasets.train_test_split(images, labels, **kwargs)


def test_train_test_split_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match="features and labels differ in length: 3 vs 2"):
        datasets.train_test_split(np.zeros((3, 2)), np.zeros(2))


def test_logistic_regression_reaches_90_percent():
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "logistic_regression.py")],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    matches = ACCURACY_LINE.findall(result.stdout)
    assert len(matches) == 1, result.stdout
    assert float(matches[0]) >= 90.0, result.stdout
    assert "epoch 30/30" in result.stdout  # one progress line per epoch, plain (not a tty)
    assert "\r" not in result.stdout


def test_logistic_regression_rejects_bad_arguments():
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "logistic_regression.py"), "--epochs", "0"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 2
    assert "--epochs and --batch-size must be >= 1 and --lr > 0" in result.stderr
