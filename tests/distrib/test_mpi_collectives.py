"""The shared conformance suite on the ``mpi`` backend: ``mpiexec -n 1/2/3``, exact expected values.

Each world size runs every case of ``_scenarios.CASES`` once, in one job started by the
mpich wheel's ``mpiexec`` with no rendezvous variables (rank, size and the store's address
come from MPI). A second run splits every count into tiny pieces (``DISTRIB_MPI_MAX_COUNT``)
to check the path taken for counts above INT_MAX.
"""

from __future__ import annotations

import functools
import tempfile

import numpy as np
import pytest

from tests.distrib import _scenarios
from tests.distrib._mpi_harness import run_mpi, skip_reason

pytestmark = pytest.mark.skipif(skip_reason() is not None, reason=str(skip_reason()))

CONFIGS = [("plain", 1), ("plain", 2), ("plain", 3), pytest.param("chunked", 2, marks=pytest.mark.slow)]
ENVS = {"plain": {}, "chunked": {"DISTRIB_MPI_MAX_COUNT": "1000"}}


@functools.cache
def _run(variant: str, size: int):
    with tempfile.TemporaryDirectory() as out:
        run = run_mpi("conformance", size, out, args=("mpi",), env=ENVS[variant], timeout=100)
    assert run.returncode == 0, f"mpiexec exited with {run.returncode}:\n{run.stderr[-4000:]}"
    assert run.leftovers == [], f"processes outlived mpiexec: {run.leftovers}"
    return [run.result(r) for r in range(size)]


def _decode(enc) -> np.ndarray:
    return np.array(enc["values"], dtype=enc["dtype"]).reshape(enc["shape"])


@pytest.mark.parametrize("case", list(_scenarios.CASES))
@pytest.mark.parametrize(("variant", "size"), CONFIGS, ids=["mpi-1", "mpi-2", "mpi-3", "mpi-chunked-2"])
def test_collective_on_mpi(variant, size, case):
    for rank, result in enumerate(_run(variant, size)):
        entry = result.get(case)
        assert entry is not None, f"rank {rank} did not reach {case} (an earlier case failed)"
        assert "error" not in entry, f"rank {rank}:\n{entry.get('error')}"
        if entry.get("skipped"):
            assert size == 1, f"{case} skipped on {size} ranks"
            continue
        actual, expected = _decode(entry["actual"]), _decode(entry["expected"])
        assert actual.shape == expected.shape, f"rank {rank}: shape {actual.shape} != {expected.shape}"
        assert actual.dtype == expected.dtype, f"rank {rank}: dtype {actual.dtype} != {expected.dtype}"
        np.testing.assert_array_equal(actual, expected, err_msg=f"rank {rank}")
