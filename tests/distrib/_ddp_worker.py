"""Entry point of one DDP test rank: ``python _ddp_worker.py <backend> [case...]``.

Rendezvous comes from the environment (``env://`` from the harness, or mpiexec's). Prints
one ``RESULT <json>`` line with every case's result, or, when ``DDP_RESULT_DIR`` is set
(under mpiexec, whose ranks share one stdout), writes it to ``<dir>/<rank>.json``.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from tests.distrib import _ddp_scenarios  # noqa: E402

if __name__ == "__main__":
    rank, results = _ddp_scenarios.run(sys.argv[1], sys.argv[2:])
    out_dir = os.environ.get("DDP_RESULT_DIR")
    if out_dir:
        with open(os.path.join(out_dir, f"{rank}.json"), "w") as f:
            json.dump(results, f)
    else:
        print("RESULT " + json.dumps(results), flush=True)
