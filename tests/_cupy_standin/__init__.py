"""The strict CuPy stand-in (``cupy/``, ``cupyx/`` here) and its switch; see README.md."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

SWITCH = "DISTRIB_CUPY_STANDIN"


def enable_if_requested() -> bool:
    """Put the stand-in first on the import path (of this process and of every subprocess, through
    PYTHONPATH) when ``DISTRIB_CUPY_STANDIN=1``; returns whether it is on.

    Raises:
        RuntimeError: if ``import cupy`` would not load the stand-in (e.g. a real CuPy was imported
            before the switch could take effect), so the cuda tests cannot silently skip or use a GPU.
    """
    if os.environ.get(SWITCH) != "1":
        return False
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != here]
    os.environ["PYTHONPATH"] = os.pathsep.join([here, *rest])
    spec = importlib.util.find_spec("cupy")
    if spec is None or not str(spec.origin).startswith(here):
        raise RuntimeError(f"{SWITCH}=1 but 'import cupy' would load {spec and spec.origin}, not the stand-in")
    return True
