"""``ReduceOp``: the reductions collectives apply, and their numpy kernels.

Each op maps to a ufunc applied pairwise (``out = f(out, peer)``), in rank order
(``reduce_in_rank_order``), so that every rank that reduces the same contributions gets
bitwise the same result. AVG is SUM followed by a division by the number of contributions.
Bitwise ops are refused on floating-point dtypes, AVG on bool, as the error message says.
On bool, SUM is "any" and PRODUCT is "all", as in PyTorch; libraries without a bool type
reduce bools as uint8 0/1 with ``as_uint8_op``.
"""

from __future__ import annotations

import numpy as np

from .errors import CollectiveArgumentError

__all__ = ["ReduceOp", "as_uint8_op", "check_op", "finish", "reduce_in_rank_order", "ufunc"]


class ReduceOp:
    """The reduction of ``all_reduce``, ``reduce`` and ``reduce_scatter``: ``ReduceOp.SUM`` etc."""

    __slots__ = ("name",)

    SUM: ReduceOp
    PRODUCT: ReduceOp
    MIN: ReduceOp
    MAX: ReduceOp
    BAND: ReduceOp
    BOR: ReduceOp
    BXOR: ReduceOp
    AVG: ReduceOp

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"ReduceOp.{self.name}"

    def __reduce__(self):
        return (getattr, (ReduceOp, self.name))


for _name in ("SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "AVG"):
    setattr(ReduceOp, _name, ReduceOp(_name))
ReduceOp.RedOpType = ReduceOp  # torch spells the enum type ReduceOp.RedOpType

_BITWISE = {"BAND", "BOR", "BXOR"}
_CHECKED: set[tuple] = set()  # (op, dtype) pairs check_op accepted
_UFUNC = {
    "SUM": np.add, "AVG": np.add, "PRODUCT": np.multiply, "MIN": np.minimum, "MAX": np.maximum,
    "BAND": np.bitwise_and, "BOR": np.bitwise_or, "BXOR": np.bitwise_xor,
}
# On bool, SUM is "any" and PRODUCT is "all", as in PyTorch.
_BOOL_UFUNC = {"SUM": np.logical_or, "PRODUCT": np.logical_and, "MIN": np.logical_and,
               "MAX": np.logical_or}
# The same rule on bools stored as uint8 0/1: "any" is MAX, "all" is MIN; the rest act alike.
_BOOL_AS_UINT8 = {"SUM": "MAX", "PRODUCT": "MIN"}


def check_op(op, dtype: np.dtype) -> ReduceOp:
    """Validate ``op`` for arrays of numpy ``dtype``; returns the ReduceOp.

    Raises:
        TypeError: ``op`` is not a ReduceOp.
        CollectiveArgumentError: the op is not defined for the dtype (bitwise on floats, AVG on
            bool); a RuntimeError and a ValueError.
        ValueError: MIN, MAX or PRODUCT on complex dtypes.
    """
    try:
        if (op, dtype) in _CHECKED:  # collectives' hot path
            return op
    except TypeError:  # unhashable: not a ReduceOp, which the next check reports
        pass
    if not isinstance(op, ReduceOp):
        raise TypeError(f"op must be a distrib.ReduceOp (e.g. ReduceOp.SUM), got {op!r}")
    dtype = np.dtype(dtype)
    if op.name in _BITWISE and dtype.kind not in "iub":
        raise CollectiveArgumentError(
            f"ReduceOp.{op.name} is a bitwise reduction and is not defined for {dtype.name} tensors; "
            "use an integer or bool dtype"
        )
    if op.name == "AVG" and dtype.kind == "b":
        raise CollectiveArgumentError(
            "ReduceOp.AVG is not defined for bool tensors; use SUM (any) or PRODUCT (all)")
    if op.name in ("MIN", "MAX", "PRODUCT") and dtype.kind == "c":  # PyTorch refuses PRODUCT too
        raise ValueError(f"ReduceOp.{op.name} is not defined for complex dtype {dtype.name}")
    _CHECKED.add((op, dtype))
    return op


def ufunc(op: ReduceOp, dtype: np.dtype):
    """The pairwise numpy ufunc of ``op`` for ``dtype``."""
    if np.dtype(dtype).kind == "b" and op.name in _BOOL_UFUNC:
        return _BOOL_UFUNC[op.name]
    return _UFUNC[op.name]


def as_uint8_op(op: ReduceOp) -> ReduceOp:
    """The op that reduces bools viewed as uint8 0/1 as ``op`` reduces bools (SUM, "any", is
    MAX; PRODUCT, "all", is MIN; the others are themselves), for libraries with no bool type."""
    return getattr(ReduceOp, _BOOL_AS_UINT8.get(op.name, op.name))


def reduce_in_rank_order(op: ReduceOp, sources: list, out=None):
    """Reduce ``sources`` (two or more same-sized arrays, one per rank, in rank order) with
    ``op`` into ``out`` (a new array if None; it may be the first or second source, which are
    read before it is written), then finish it (AVG divides). Ranks that reduce the same
    sources get bitwise the same result. Returns ``out``."""
    f = ufunc(op, sources[0].dtype)
    out = f(sources[0], sources[1], out=out)
    for source in sources[2:]:
        f(out, source, out=out)
    finish(op, out, len(sources))
    return out


def finish(op: ReduceOp, out: np.ndarray, count: int) -> None:
    """Finish a reduction of ``count`` contributions in place (divides for AVG)."""
    if op.name != "AVG" or count == 1:
        return
    if out.dtype.kind in "iu":  # integer division truncating toward zero, as NCCL's AVG does
        q = np.abs(out) // count
        np.multiply(np.sign(out), q, out=out)
    else:  # floats, complex, and ml_dtypes' bfloat16 (numpy kind "V")
        np.divide(out, count, out=out)
