"""``ReduceOp``: the reductions collectives apply, and their numpy kernels.

Each op maps to a ufunc applied pairwise (``out = f(out, peer)``). AVG is SUM
followed by a division by the number of contributions. Bitwise ops are refused on
floating-point dtypes, AVG on bool, as the error message says.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ReduceOp", "check_op", "combine", "finish"]


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


def check_op(op, dtype: np.dtype) -> ReduceOp:
    """Validate ``op`` for arrays of numpy ``dtype``; returns the ReduceOp.

    Raises:
        TypeError: ``op`` is not a ReduceOp.
        ValueError: the op is not defined for the dtype (bitwise on floats, AVG on bool).
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
        raise ValueError(
            f"ReduceOp.{op.name} is a bitwise reduction and is not defined for {dtype.name} tensors; "
            "use an integer or bool dtype"
        )
    if op.name == "AVG" and dtype.kind == "b":
        raise ValueError("ReduceOp.AVG is not defined for bool tensors; use SUM (any) or PRODUCT (all)")
    if op.name in ("MIN", "MAX") and dtype.kind == "c":
        raise ValueError(f"ReduceOp.{op.name} is not defined for complex dtype {dtype.name}")
    _CHECKED.add((op, dtype))
    return op


def ufunc(op: ReduceOp, dtype: np.dtype):
    """The pairwise numpy ufunc of ``op`` for ``dtype``."""
    if np.dtype(dtype).kind == "b" and op.name in _BOOL_UFUNC:
        return _BOOL_UFUNC[op.name]
    return _UFUNC[op.name]


def combine(op: ReduceOp, out: np.ndarray, other) -> None:
    """``out = op(out, other)`` in place (``other`` may be any buffer of out's dtype and size)."""
    f = ufunc(op, out.dtype)
    f(out, other, out=out)


def finish(op: ReduceOp, out: np.ndarray, count: int) -> None:
    """Finish a reduction of ``count`` contributions in place (divides for AVG)."""
    if op.name != "AVG" or count == 1:
        return
    if out.dtype.kind == "f" or out.dtype.kind == "c":
        np.divide(out, count, out=out)
    else:  # integer division truncating toward zero, as NCCL's AVG does
        q = np.abs(out) // count
        np.multiply(np.sign(out), q, out=out)
