"""Small data sets bundled with the examples (numpy only, no download).

``load_digits`` reads ``examples/data/digits.npz``: the 8x8 handwritten digits that
scikit-learn ships as ``sklearn.datasets.load_digits`` (see ``examples/data/README.md``
for the source and license).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

DATA_DIR = Path(__file__).resolve().parent / "data"
DIGITS_PATH = DATA_DIR / "digits.npz"


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """The 1797 digits as ``(images, labels)``.

    ``images`` is float32 of shape (1797, 64), the 8x8 pixels row by row scaled from
    0..16 to [0, 1]; ``labels`` is int64 of shape (1797,), the digits 0..9.
    """
    with np.load(DIGITS_PATH) as archive:
        images, labels = archive["images"], archive["labels"]
    flat = images.reshape(len(images), -1).astype(np.float32) / np.float32(16.0)
    return flat, labels.astype(np.int64)


def train_test_split(
    features: np.ndarray, labels: np.ndarray, *, test_fraction: float = 0.2, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Shuffle with ``seed`` and split into ``(train_x, train_y, test_x, test_y)``.

    The same arguments always give the same split; the test part holds
    ``round(len(features) * test_fraction)`` samples (at least one of each part).
    """
    if len(features) != len(labels):
        raise ValueError(f"features and labels differ in length: {len(features)} vs {len(labels)}")
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    n = len(features)
    n_test = min(max(int(round(n * test_fraction)), 1), n - 1)
    order = np.random.default_rng(seed).permutation(n)
    test, train = order[:n_test], order[n_test:]
    return features[train], labels[train], features[test], labels[test]
