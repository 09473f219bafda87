"""``distrib-launch`` / ``python -m launch``: the job launcher's command line (a placeholder)."""

from __future__ import annotations

import sys

NOT_IMPLEMENTED = "distrib-launch: not implemented yet (see the launcher issue)"


def main(argv=None) -> int:
    """Print that the launcher does not exist yet and exit with status 2."""
    print(NOT_IMPLEMENTED, file=sys.stderr)
    raise SystemExit(2)


if __name__ == "__main__":
    main()
