"""The shared conformance suite on the ``mpi`` backend: ``mpiexec -n 1/2/3``, exact expected values.

Each world size runs every case of ``_scenarios.CASES`` once, in one job started by the
mpich wheel's ``mpiexec`` with no rendezvous variables (rank, size and the store's address
come from MPI). Further runs send every all_reduce through the ring (or none), and split
every count into tiny pieces (``DISTRIB_MPI_MAX_COUNT``) to check the path taken for counts
above INT_MAX.
"""

from __future__ import annotations

import functools
import tempfile

import pytest

from tests.distrib import _scenarios
from tests.distrib._mpi_harness import needs_mpi, run_mpi

pytestmark = needs_mpi

CONFIGS = [("plain", 1), ("plain", 2), ("plain", 3), ("ring", 3), pytest.param("native", 2, marks=pytest.mark.slow),
           pytest.param("chunked", 2, marks=pytest.mark.slow)]
ENVS = {"plain": {}, "chunked": {"DISTRIB_MPI_MAX_COUNT": "1000"},
        # every all_reduce through the ring (Note [MPI ring all_reduce]), or none at all
        "ring": {"DISTRIB_MPI_RING_MIN_BYTES": "0"}, "native": {"DISTRIB_MPI_RING_MIN_BYTES": str(1 << 62)}}


@functools.cache
def _run(variant: str, size: int):
    with tempfile.TemporaryDirectory() as out:
        run = run_mpi("conformance", size, out, args=("mpi",), env=ENVS[variant], timeout=100)
    assert run.returncode == 0, f"mpiexec exited with {run.returncode}:\n{run.stderr[-4000:]}"
    assert run.leftovers == [], f"processes outlived mpiexec: {run.leftovers}"
    return [run.result(r) for r in range(size)]


@pytest.mark.parametrize("case", list(_scenarios.CASES))
@pytest.mark.parametrize(("variant", "size"), CONFIGS,
                         ids=["mpi-1", "mpi-2", "mpi-3", "mpi-ring-3", "mpi-native-2", "mpi-chunked-2"])
def test_collective_on_mpi(variant, size, case):
    _scenarios.check_conformance_case(_run(variant, size), case, size)
