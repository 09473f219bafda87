"""The CPU LU/LDL paths side by side in one process (Note [LAPACK through ctypes] in
tensor/_lapack.py): LAPACK through numpy's bundled OpenBLAS, the numpy fallback
(``DISTRIB_NO_LAPACK=1``, toggled between calls) and torch, best of ``--repeat`` alternating runs.

    OMP_NUM_THREADS=1 .venv/bin/python scripts/bench_lapack_paths.py --repeat 7
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

import tensor
from tensor import _openblas


def _cases(rng):
    a, batch = rng.standard_normal((128, 128)), rng.standard_normal((64, 32, 32))
    sym = rng.standard_normal((64, 64))
    syms = rng.standard_normal((16, 64, 64))
    square, rhs = rng.standard_normal((256, 256)), rng.standard_normal((256, 16))
    ours_lu = tensor.linalg.lu_factor(tensor.from_numpy(square))
    theirs_lu = torch.linalg.lu_factor(torch.from_numpy(square))
    return [
        ("lu_factor 128x128", tensor.linalg.lu_factor, torch.linalg.lu_factor, a),
        ("lu_factor 64 x 32x32", tensor.linalg.lu_factor, torch.linalg.lu_factor, batch),
        ("ldl_factor 64x64", tensor.linalg.ldl_factor, torch.linalg.ldl_factor, sym + sym.T),
        ("ldl_factor 16 x 64x64", tensor.linalg.ldl_factor, torch.linalg.ldl_factor, syms + syms.swapaxes(1, 2)),
        (
            "lu_solve 256x256, 16 rhs",
            lambda b: tensor.linalg.lu_solve(*ours_lu, b),
            lambda b: torch.linalg.lu_solve(*theirs_lu, b),
            rhs,
        ),
    ]


def _seconds(fn, arg) -> float:
    start = time.perf_counter()
    fn(arg)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    repeat = parser.parse_args().repeat
    for name, ours, theirs, x in _cases(np.random.default_rng(16)):
        ours_x, theirs_x = tensor.from_numpy(x), torch.from_numpy(x)
        best = {"lapack": float("inf"), "numpy": float("inf"), "torch": float("inf")}
        for _ in range(repeat):
            for path, value in (("lapack", ""), ("numpy", "1")):
                os.environ[_openblas.DISABLE_ENV] = value
                best[path] = min(best[path], _seconds(ours, ours_x))
            best["torch"] = min(best["torch"], _seconds(theirs, theirs_x))
        os.environ.pop(_openblas.DISABLE_ENV)
        lapack, numpy_, torch_ = (best[k] * 1e3 for k in ("lapack", "numpy", "torch"))
        print(
            f"{name:26s} lapack {lapack:8.3f} ms  numpy {numpy_:8.3f} ms  torch {torch_:7.3f} ms  "
            f"numpy/lapack {numpy_ / lapack:5.1f}x  lapack/torch {lapack / torch_:5.2f}x"
        )


if __name__ == "__main__":
    main()
