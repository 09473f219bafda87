"""The op table: every op's forward kernel and derivative rule, side by side.

An op is defined once, as in PyTorch's ``derivatives.yaml`` beside its kernels::

    @defop("mul", saves=(0, 1))
    def mul(xp, a, b):
        return xp.multiply(a, b)

    @mul.derivative
    def _(node, grad):
        a, b = node.saved
        return grad * b, grad * a

* The kernel takes the array module ``xp`` (numpy or cupy), the input arrays,
  then the op's non-tensor parameters, and returns one array.
* The derivative takes the graph node and the output gradient (a Tensor) and
  returns one gradient per tensor input (None where there is none). It is
  written with Tensor ops, so it is itself differentiable: double backward
  works for free.
* ``saves`` lists the inputs the derivative reads (``node.saved``), in increasing
  order (None: all of them); with
  ``saves_output`` it may read ``node.output``. Only those are kept alive and
  checked against in-place modification.
* Ops whose output can never carry a gradient (comparisons, argmax, ...)
  are declared with ``differentiable=False``.
"""

from __future__ import annotations

from collections.abc import Callable

from .._opdef import OpDef

__all__ = ["OpDef", "defop", "OPS", "public"]

OPS: dict[str, OpDef] = {}


def defop(
    name: str,
    *,
    saves: tuple = (),
    saves_output: bool = False,
    differentiable: bool = True,
    is_view: bool = False,
    saved_for: tuple | None = None,
    operator: Callable | None = None,
) -> Callable[[Callable], OpDef]:
    """Register a kernel under ``name``; use the returned OpDef's ``.derivative`` for its rule.

    ``saved_for``, aligned with ``saves``: for each saved input, the input position whose
    gradient alone reads it (None: always kept). The input is then saved only when that
    gradient is needed, as PyTorch saves ``self`` for ``mul`` only when ``other`` requires
    grad; the derivative sees None in its place otherwise. ``operator``: a binary Python
    operator (``operator.mul``) equal to the kernel on arrays of every backend except the
    low-precision ml_dtypes ones; the dispatcher calls it instead of the kernel's Python frame.

    Raises:
        ValueError: for a name registered twice, ``saves`` not in increasing order, or
            ``saved_for`` not aligned with ``saves``.
    """

    def register(kernel: Callable) -> OpDef:
        if name in OPS:
            raise ValueError(f"op {name!r} is registered twice")
        if saves is not None and list(saves) != sorted(set(saves)):  # autograd.graph.Node relies on it
            raise ValueError(f"op {name!r}: saves={saves} must be increasing input positions")
        if saved_for is not None and (saves is None or len(saved_for) != len(saves)):
            raise ValueError(f"op {name!r}: saved_for={saved_for} must give one entry per saved input {saves}")
        op = OpDef(name, kernel, saves, saves_output, differentiable, is_view, saved_for, operator)
        OPS[name] = op
        return op

    return register


def public(fn: Callable, name: str, doc: str) -> Callable:
    """``fn``, made by an op factory, named ``name`` (``__name__`` and ``__qualname__``) and documented."""
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn
