"""The shared conformance suite on the ``mpi`` backend: ``mpiexec -n 1/2/3``, exact expected values.

Each world size runs every case of ``_scenarios.CASES`` once, in one job started by the
mpich wheel's ``mpiexec`` with no rendezvous variables (rank, size and the store's address
come from MPI); the ranks check their own results and write one verdict per case. Further
runs send every all_reduce through the ring (or none), and split every count into tiny
pieces (``DISTRIB_MPI_MAX_COUNT``) to check the path taken for counts above INT_MAX.
"""

from __future__ import annotations

import pytest

from tests.distrib import _scenarios
from tests.distrib._mpi_harness import mpi_rank_results, needs_mpi

pytestmark = needs_mpi

CONFIGS = [pytest.param(("plain", 1), id="mpi-1"), pytest.param(("plain", 2), id="mpi-2"),
           pytest.param(("plain", 3), id="mpi-3"), pytest.param(("ring", 3), id="mpi-ring-3"),
           pytest.param(("native", 2), id="mpi-native-2", marks=pytest.mark.slow),
           pytest.param(("chunked", 2), id="mpi-chunked-2", marks=pytest.mark.slow)]
ENVS = {"plain": {}, "chunked": {"DISTRIB_MPI_MAX_COUNT": "1000"},
        # every all_reduce through the ring (Note [MPI ring all_reduce]), or none at all
        "ring": {"DISTRIB_MPI_RING_MIN_BYTES": "0"}, "native": {"DISTRIB_MPI_RING_MIN_BYTES": str(1 << 62)}}


@pytest.fixture(scope="module", params=CONFIGS)
def verdicts(request) -> list[dict]:
    """Every rank's verdicts on every case, for one (variant, world size); dropped by pytest
    once the configuration's last case has run."""
    variant, size = request.param
    return mpi_rank_results("conformance", size, args=("mpi",), env=ENVS[variant], timeout=100)


@pytest.mark.parametrize("case", list(_scenarios.CASES))
def test_collective_on_mpi(verdicts, case):
    _scenarios.check_conformance_case(verdicts, case)
