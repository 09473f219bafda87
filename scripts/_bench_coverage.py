"""Issue 16: new ops against the numpy call each wraps (imported by the core group of bench.py)."""

from __future__ import annotations

import numpy as np

import tensor


def _topk_numpy(a, k):
    part = np.argpartition(a, a.shape[-1] - k, axis=-1)[..., -k:]
    values = np.take_along_axis(a, part, axis=-1)
    order = np.argsort(-values, axis=-1, kind="stable")
    return np.take_along_axis(values, order, axis=-1), np.take_along_axis(part, order, axis=-1)


def rows(repeat: int, paired_times) -> list:
    """(workload, ours ms, numpy ms, "numpy", target) for sort, topk, cumsum, linalg.solve, fft.rfft."""
    rng = np.random.default_rng(16)
    x = rng.standard_normal((1000, 1000), dtype=np.float32)
    a = rng.standard_normal((64, 32, 32)) + 8 * np.eye(32)
    b = rng.standard_normal((64, 32, 4))
    s = rng.standard_normal(1 << 20, dtype=np.float32)
    xt, at, bt, st = (tensor.from_numpy(v) for v in (x, a, b, s))
    cases = [
        (
            "sort 1000x1000 float32, dim=-1",
            lambda: xt.sort(-1),
            lambda: (lambda i: (np.take_along_axis(x, i, -1), i))(np.argsort(x, -1, kind="stable")),
        ),
        ("topk k=10 of 1000x1000 float32", lambda: xt.topk(10, -1), lambda: _topk_numpy(x, 10)),
        ("cumsum 1000x1000 float32, dim=1", lambda: xt.cumsum(1), lambda: np.cumsum(x, 1)),
        ("linalg.solve 64 x (32x32, 32x4) float64", lambda: tensor.linalg.solve(at, bt), lambda: np.linalg.solve(a, b)),
        ("fft.rfft 1M float32", lambda: tensor.fft.rfft(st), lambda: np.fft.rfft(s)),
    ]
    cases += _numerics_cases(rng)
    cases += _utilities_cases(rng)
    out = []
    for name, ours_fn, numpy_fn in cases:
        ours, peer = paired_times(ours_fn, numpy_fn, repeat)
        out.append((f"{name} (ms)", ours * 1e3, peer * 1e3, "numpy", "<= 1.2x"))
    return out


def _numerics_cases(rng) -> list:
    """i0, gradient, histogramdd, poisson (issue 16's numerics) against numpy's call."""
    v = rng.uniform(-30, 30, 1 << 20)
    f = rng.standard_normal((1000, 1000), dtype=np.float32)
    points = rng.standard_normal((1 << 18, 3))
    rates = rng.uniform(0, 20, 1 << 20)
    vt, ft, pt, rt = (tensor.from_numpy(a) for a in (v, f, points, rates))
    gen = np.random.default_rng(0)
    return [
        ("i0 1M float64", lambda: tensor.i0(vt), lambda: np.i0(v)),
        ("gradient 1000x1000 float32, both dims", lambda: tensor.gradient(ft), lambda: np.gradient(f)),
        (
            "histogramdd 256K x 3 float64, 16 bins",
            lambda: tensor.histogramdd(pt, 16),
            lambda: np.histogramdd(points, 16),
        ),
        ("poisson 1M rates float64", lambda: tensor.poisson(rt), lambda: gen.poisson(rates)),
    ]


def _utilities_cases(rng) -> list:
    """hash_tensor, nonzero_static, channels_last (issue 16's torch.* utilities) against numpy's calls."""
    v = rng.standard_normal(1 << 20)
    mask = rng.random(1 << 20) < 0.5
    image = rng.standard_normal((16, 64, 56, 56), dtype=np.float32)
    vt, mt, it = (tensor.from_numpy(a) for a in (v, mask, image))

    def numpy_nonzero_static(size):
        found = np.argwhere(mask)[:size]
        return np.concatenate([found, np.full((size - len(found), 1), -1)])

    return [
        ("hash_tensor 1M float64", lambda: tensor.hash_tensor(vt), lambda: np.bitwise_xor.reduce(v.view(np.int64))),
        (
            "nonzero_static 1M bool, size 600K",
            lambda: tensor.nonzero_static(mt, size=600_000),
            lambda: numpy_nonzero_static(600_000),
        ),
        (
            "contiguous(channels_last) 16x64x56x56 float32",
            lambda: it.contiguous(memory_format=tensor.channels_last),
            lambda: np.ascontiguousarray(image.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2),
        ),
    ]
