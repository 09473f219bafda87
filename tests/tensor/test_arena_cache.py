"""The compiled arena cache (Note [Arena cache] in tensor/_accelerator.py).

A live chain of recorded ops keeps its memory in pymalloc's 1 MiB arenas; without the cache,
dropping the chain gives them back to the OS and the next chain page-faults them in again.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from tensor import _accelerator

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Builds and drops a live chain of recorded y = y * c twice; prints the minor page faults of
# each round and whether the cache is the process's arena allocator.
_CHILD = """
import json, resource
import tensor
from tensor import _arena

def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt

x = tensor.ones(4, requires_grad=True)
c = tensor.full((4,), 1.0001)
rounds = []
for _ in range(2):
    before = faults()
    y = x
    for _ in range(40_000):
        y = y * c
    del y
    rounds.append(faults() - before)
print(json.dumps({"faults": rounds, "installed": _arena.installed(), "stats": _arena.stats()}))
"""


def _skip_without_the_cache() -> None:
    if _accelerator.pure_python_requested():
        pytest.skip("DISTRIB_PURE_PYTHON=1: no compiled arena cache")
    if not _accelerator.is_built("tensor._arena"):
        pytest.skip("installed without the compiled accelerator: no arena cache")


def _run_child(cache_mb: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "DISTRIB_ARENA_CACHE_MB"}
    if cache_mb is not None:
        env["DISTRIB_ARENA_CACHE_MB"] = cache_mb
    out = subprocess.run(
        [sys.executable, "-c", _CHILD], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_second_long_chain_reuses_the_arenas_only_with_the_cache():
    _skip_without_the_cache()
    cached = _run_child(None)  # the default: installed
    plain = _run_child("0")
    # The chain's ~11 MiB fault in ~2,800 pages in the first round either way.
    for run in (cached, plain):
        assert run["faults"][0] > 1500, run
    assert cached["installed"] and cached["stats"]["hits"] >= 5, cached
    assert cached["faults"][1] < 0.2 * cached["faults"][0], f"the cache did not keep the arenas: {cached}"
    # DISTRIB_ARENA_CACHE_MB=0 leaves CPython's allocator alone, which unmaps emptied arenas.
    assert not plain["installed"] and plain["stats"]["capacity"] == 0, plain
    assert plain["faults"][1] > 0.5 * plain["faults"][0], plain


def test_installed_once_and_the_setting_checked(monkeypatch):
    _skip_without_the_cache()
    from tensor import _arena

    if os.environ.get("DISTRIB_ARENA_CACHE_MB", "") != "0":
        assert _arena.installed()  # by `import tensor`
        assert not _arena.install(64 << 20), "installed a second time"
    monkeypatch.setenv("DISTRIB_ARENA_CACHE_MB", "lots")
    with pytest.raises(ValueError, match="'lots'"):
        _accelerator.install_arena_cache()
    monkeypatch.setenv("DISTRIB_ARENA_CACHE_MB", "0")
    assert not _accelerator.install_arena_cache()
