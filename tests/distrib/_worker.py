"""Entry point of one rank: ``python _worker.py <scenario> [args...]`` (env:// rendezvous).

``scenario`` names a function of ``_scenarios``, ``_ddp_scenarios`` or ``_sharding_scenarios``;
its JSON-able return value is printed as one ``RESULT <json>`` line.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from tests.distrib import _ddp_scenarios, _scenarios, _sharding_scenarios  # noqa: E402

if __name__ == "__main__":
    name, args = sys.argv[1], sys.argv[2:]
    result = (
        getattr(_scenarios, name, None) or getattr(_sharding_scenarios, name, None) or getattr(_ddp_scenarios, name)
    )(*args)
    print("RESULT " + json.dumps(result), flush=True)
