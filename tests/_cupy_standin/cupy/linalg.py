"""``cupy.linalg`` for the stand-in: CuPy 13's functions, each numpy's as a kernel on the current
device (results as plain tuples, as CuPy returns them, not numpy's named tuples)."""

from __future__ import annotations

import functools

import numpy as np

from . import _kernels

NAMES = """
    cholesky det eigh eigvalsh inv lstsq matrix_power matrix_rank norm pinv qr slogdet solve svd
    tensorinv tensorsolve
""".split()


def _plain(np_func):
    @functools.wraps(np_func)
    def run(*args, **kwargs):
        result = np_func(*args, **kwargs)
        return tuple(result) if isinstance(result, tuple) else result

    return run


globals().update({name: _kernels.function(_plain(getattr(np.linalg, name)), name) for name in NAMES})
