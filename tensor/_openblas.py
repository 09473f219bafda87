"""The OpenBLAS that numpy's wheel bundles, found once and shared (Note [Bundled OpenBLAS]).

Note [Bundled OpenBLAS]: numpy's wheels carry their own OpenBLAS (``numpy.libs/`` on Linux,
``numpy/.dylibs/`` on macOS) with LAPACK inside, but numpy exposes neither ``getrf`` nor
``sytrf``. The library is opened here with ctypes and a routine is looked up among the names
its builds use: scipy-openblas64 prefixes ``scipy_`` and suffixes ``64_`` (64-bit integers,
as this venv's numpy 2: ``scipy_dgetrf_64_``, ``scipy_cblas_sgemm64_``), a plain 64-bit build
only suffixes, a 32-bit build has the bare Fortran (``dgetrf_``) or C (``cblas_sgemm``)
name. ``lapack``/``cblas`` return the ctypes function with the integer type of that interface,
or None when there is no such library or routine (another numpy build): callers then keep
their numpy code. ``DISTRIB_NO_LAPACK=1`` makes every lookup fail, to run (and test) those
fallbacks.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os
from typing import NamedTuple

import numpy as np

__all__ = ["Routine", "cblas", "lapack", "library"]

DISABLE_ENV = "DISTRIB_NO_LAPACK"


class Routine(NamedTuple):
    """A routine of the bundled OpenBLAS: the ctypes function (argument types not set) and
    the ctypes integer type of its interface (``c_int64`` or ``c_int32``)."""

    fn: ctypes._CFuncPtr
    int_type: type


@functools.cache
def library() -> ctypes.CDLL | None:
    """numpy's bundled OpenBLAS, opened with ctypes, or None if this numpy has none."""
    root = os.path.dirname(np.__file__)
    patterns = (
        os.path.join(os.path.dirname(root), "numpy.libs", "*openblas*"),
        os.path.join(root, ".dylibs", "*openblas*"),
    )
    for path in sorted(p for pattern in patterns for p in glob.glob(pattern)):
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


@functools.cache
def _resolve(names: tuple[tuple[str, type], ...]) -> Routine | None:
    lib = library()
    for name, int_type in names if lib is not None else ():
        fn = getattr(lib, name, None)
        if fn is not None:
            return Routine(fn, int_type)
    return None


def _enabled() -> bool:
    return os.environ.get(DISABLE_ENV, "") in ("", "0")


def lapack(name: str) -> Routine | None:
    """The Fortran LAPACK/BLAS routine ``name`` (as ``"dgetrf"``), or None (Note [Bundled OpenBLAS])."""
    i64, i32 = ctypes.c_int64, ctypes.c_int32
    names = ((f"scipy_{name}_64_", i64), (f"{name}_64_", i64), (f"scipy_{name}_", i32), (f"{name}_", i32))
    return _resolve(names) if _enabled() else None


def cblas(name: str) -> Routine | None:
    """The CBLAS routine ``cblas_<name>`` (as ``"sgemm"``), or None (Note [Bundled OpenBLAS])."""
    i64, i32 = ctypes.c_int64, ctypes.c_int32
    names = ((f"scipy_cblas_{name}64_", i64), (f"cblas_{name}64_", i64), (f"scipy_cblas_{name}", i32))
    return _resolve(names + ((f"cblas_{name}", i32),)) if _enabled() else None
