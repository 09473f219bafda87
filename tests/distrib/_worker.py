"""Entry point of one rank: ``python _worker.py <scenario> [args...]`` (env:// rendezvous)."""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from tests.distrib import _scenarios  # noqa: E402

if __name__ == "__main__":
    result = getattr(_scenarios, sys.argv[1])(*sys.argv[2:])
    print("RESULT " + json.dumps(result), flush=True)
