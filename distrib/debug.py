"""``DISTRIB_DEBUG=DETAIL``: check across ranks that every collective agrees.

Before each collective, every rank of the group writes the op's signature (name,
shapes, dtypes, root, reduce op) to the group's store under its sequence number and
reads everyone else's. A mismatch raises DistError on every rank, naming the ranks and
what differs, instead of hanging or silently mixing data. A rank that never arrives
makes the others fail with DistBackendError naming the op, its sequence number and the
missing ranks. It costs a store round trip per op, hence off by default.
"""

from __future__ import annotations

import json
import os

from .errors import DistBackendError, DistError

__all__ = ["mode", "check_consistency"]


def mode() -> str:
    """``OFF`` (default), ``INFO`` or ``DETAIL``, from ``DISTRIB_DEBUG``."""
    value = os.environ.get("DISTRIB_DEBUG", "OFF").upper()
    return value if value in ("OFF", "INFO", "DETAIL") else "OFF"


def _describe(sig: dict) -> str:
    return f"{sig['collective']}(" + ", ".join(f"{k}={v}" for k, v in sig.items() if k != "collective") + ")"


def check_consistency(pg, name: str, seq: int, signature: dict) -> None:
    """Compare this op's signature with every rank of ``pg``; raise on mismatch or timeout."""
    store, me, size = pg.store, pg.rank(), pg.size()
    mine = {"collective": name, **{k: (list(v) if isinstance(v, tuple) else v) for k, v in signature.items()}}
    store.set(f"debug/{seq}/{me}", json.dumps(mine, default=str, sort_keys=True))
    keys = [f"debug/{seq}/{r}" for r in range(size)]
    try:
        store.wait(keys, pg.timeout)
    except DistError:
        missing = [r for r in range(size) if not store.check([keys[r]])]
        raise DistBackendError(
            f"[DISTRIB_DEBUG] {name} (op seq {seq}) on rank {me}: timed out after {pg.timeout:g} s; "
            f"missing rank(s) {missing} never called it (or called fewer collectives)"
        ) from None
    sigs = [json.loads(store.get(k)) for k in keys]
    if seq > 1:
        store.delete_key(f"debug/{seq - 1}/{me}")  # every rank has read it: they all wrote seq
    if all(s == mine for s in sigs):
        return
    # Every rank sees the mismatch. Leave only once all have read the signatures: rank 0
    # may host the store, and its exit would leave the others with a store error instead.
    if store.add(f"debug/{seq}/seen", 1) == size:
        store.set(f"debug/{seq}/all_seen", "1")
    try:
        store.wait([f"debug/{seq}/all_seen"], min(pg.timeout, 10.0))
    except DistError:
        pass
    lines = [f"  rank {r}: {_describe(s)}" for r, s in enumerate(sigs)]
    raise DistError(
        f"[DISTRIB_DEBUG] collective mismatch at op seq {seq} of group {pg.group_name}: the ranks called\n"
        + "\n".join(lines)
        + "\nhelp: every rank must call the same collectives in the same order, with tensors of the "
        "same shape and dtype"
    )
