"""One rank: ``python _mpi_worker.py <out_dir> <scenario> [args...]`` (started by mpiexec, or
with RANK/WORLD_SIZE/MASTER_* set).

``scenario`` names a function of ``_mpi_scenarios``, ``_nccl_scenarios``, ``_scenarios``,
``_sharding_scenarios`` or ``_ddp_scenarios``; its JSON-able return value goes to
``<out_dir>/rank<r>.json``, r being the MPI rank. With ``DISTRIB_TEST_LINGER=<seconds>`` the
rank then waits that long before it exits: a rank whose communicator failed ends the job with
MPI_Abort at exit, which would kill the other failing ranks before they write their results.
"""

from __future__ import annotations

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from tests.distrib import (  # noqa: E402
    _ddp_scenarios,
    _mpi_scenarios,
    _nccl_scenarios,
    _scenarios,
    _sharding_scenarios,
)

if __name__ == "__main__":
    out_dir, name, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    rank = next(int(os.environ[v]) for v in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "RANK") if v in os.environ)
    fn = (
        getattr(_mpi_scenarios, name, None)
        or getattr(_nccl_scenarios, name, None)
        or getattr(_scenarios, name, None)
        or getattr(_sharding_scenarios, name, None)
        or getattr(_ddp_scenarios, name)
    )
    result = fn(*args)
    path = os.path.join(out_dir, f"rank{rank}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(result, f)
    os.replace(path + ".tmp", path)
    time.sleep(float(os.environ.get("DISTRIB_TEST_LINGER", "0")))
