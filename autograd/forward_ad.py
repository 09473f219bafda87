"""Forward-mode AD: dual tensors and their tangents. Our ``torch.autograd.forward_ad``.

Example::

    >>> import tensor
    >>> from autograd import forward_ad as fwAD
    >>> x, v = tensor.tensor([1.0, 2.0]), tensor.tensor([1.0, 0.0])
    >>> with fwAD.dual_level():
    ...     y = (fwAD.make_dual(x, v) ** 2).sum()
    ...     fwAD.unpack_dual(y).tangent
    tensor(2.)

Note [Lazy tangents]
~~~~~~~~~~~~~~~~~~~~
There are no per-op forward-mode rules here. Every op's reverse-mode derivative is written in
differentiable tensor ops (double backward works for all of them), so a Jacobian-vector
product is two reverse passes (the double-backward trick, as ``func.jvp``): the VJP
``g(u) = J^T u`` with a cotangent leaf ``u``, recorded, then the VJP of ``g`` with the tangent,
``J t``. So ``make_dual`` returns a tensor that requires grad (a fresh leaf sharing the primal's
storage, or a view of the primal when that requires grad, so reverse mode still reaches it)
and remembers its tangent; ops record the ordinary graph from it; ``unpack_dual`` finds the duals
that the graph of its argument reaches and computes the tangent then. Departures from torch:

* a dual tensor reports ``requires_grad=True`` and the ops on it record a graph, also when
  reverse mode is not wanted; results computed under ``no_grad`` or ``inference_mode`` record
  nothing and so carry no tangent (torch's forward grads ignore the grad mode);
* a tangent is computed when unpacked, at the cost of two backward passes through the graph;
  it does not record a graph itself (no reverse mode through a computed tangent);
* the primal of a result that also depends on other tensors requiring grad (parameters, or the
  primal of a dual made from a tensor requiring grad) is a view of the result, so it stays
  differentiable for them but also still carries the tangent; otherwise it is detached.

Each of torch's levels is one at a time (torch supports no nesting either); exiting it forgets
its duals, whose tangents then unpack as None.
"""

from __future__ import annotations

import contextlib
import weakref
from typing import NamedTuple

from tensor import Tensor, _dispatch, zeros
from tensor._func_transforms import _forward_products, _in_tangent_dtype, _is_differentiable

from .grad_mode import enable_grad
from .graph import AccumulateGrad, Node, _set_history

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "dual_level"]

_NO_LEVEL = -1
_current_level = _NO_LEVEL


class _Dual(NamedTuple):
    """A dual of the current level, by the target the recorded graph holds for it: the leaf
    tensor, or the view's node when the dual is a view of a primal that requires grad (the node
    outlives the dual tensor object while a graph computed from it lives)."""

    target: weakref.ref
    tangent: Tensor
    dtype: object  # the primal's


_duals: dict[int, _Dual] = {}  # id(target) -> its _Dual


class UnpackedDualTensor(NamedTuple):
    """What ``unpack_dual`` returns: the primal and the tangent (None when there is none)."""

    primal: Tensor
    tangent: Tensor | None


def enter_dual_level() -> int:
    """Enter a forward AD level and return it (0: only one level can exist at a time).

    Raises:
        RuntimeError: if a level already exists (nested forward AD is not supported).
    """
    global _current_level
    if _current_level != _NO_LEVEL:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _current_level = 0
    return _current_level


def exit_dual_level(*, level: int | None = None) -> None:
    """Exit the current forward AD level (``level``, if given, must be it); its duals' tangents
    are forgotten.

    Raises:
        RuntimeError: if ``level`` is not the current level, or no level exists.
    """
    global _current_level
    level = _current_level if level is None else level
    if level != _current_level:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. "
                           "This is not supported.")
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    _duals.clear()
    _current_level = _NO_LEVEL


class dual_level(contextlib.ContextDecorator):  # noqa: N801 - PyTorch's name
    """Context manager (or decorator) in which forward AD happens: enters a level, exits it after.

    Raises:
        RuntimeError: on entry, if a level already exists.
    """

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc) -> None:
        exit_dual_level()


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """A dual tensor: ``tensor``'s values (sharing its storage) with ``tangent`` attached at the
    current level, for ``unpack_dual`` to push forward (Note [Lazy tangents]). It requires grad;
    it is a view of ``tensor`` when that requires grad, so reverse mode through it reaches ``tensor``.

    Raises:
        RuntimeError: outside a dual level, for a ``level`` other than the current one, when
            ``tensor`` already has a tangent at this level, or when the shapes differ.
        ValueError: if ``tensor`` or ``tangent`` is not floating point or complex.
    """
    level = _current_level if level is None else level
    if level < 0:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                           "enter_dual_level() first.")
    if _current_level == _NO_LEVEL:
        raise RuntimeError("Trying to access a forward AD level with an invalid index. This index was either not "
                           "created or is already deleted.")
    if level != _current_level:
        raise RuntimeError("Invalid level given to _make_dual")
    for name, value in (("primal", tensor), ("tangent", tangent)):
        if not _is_differentiable(value):
            raise ValueError(f"Expected {name} to be floating point or complex, but got: {value.dtype}")
    if _reachable_duals(tensor)[0]:
        raise RuntimeError("Making a dual Tensor based on a Tensor that already has a forward gradient at the same "
                           f"level {level} is not supported.")
    if tensor.shape != tangent.shape:
        raise RuntimeError("Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {list(tensor.shape)} while the given "
                           f"forward gradient is of size {list(tangent.shape)}.")
    if tensor.requires_grad:
        with enable_grad():
            dual = tensor.view_as(tensor)
        _register(dual.grad_fn, dual, tangent)
    else:
        dual = tensor.detach().requires_grad_()
        _register(dual, dual, tangent)
    return dual


def unpack_dual(tensor: Tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of ``tensor`` at the current level: for a dual, its values and its
    tangent as given; for a tensor computed from duals, its values and the Jacobian-vector
    product of those duals' tangents, computed now (Note [Lazy tangents]); the tangent is None
    for any other tensor, an integer one, or outside a level.

    Raises:
        TypeError: if ``tensor`` is not a Tensor.
        RuntimeError: for a ``level`` other than the current one.
    """
    if not _dispatch.is_tensor(tensor):
        raise TypeError(f"unpack_dual(): argument 'tensor' must be Tensor, not {type(tensor).__name__}")
    level = _current_level if level is None else level
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    if level != _current_level:
        raise RuntimeError("Invalid level given to _fw_primal")
    own = _dual_of(tensor if tensor.grad_fn is None else tensor.grad_fn)
    duals, reaches_other = _reachable_duals(tensor)
    if not duals:
        return UnpackedDualTensor(tensor, None)
    primal = tensor.view_as(tensor) if reaches_other else tensor.detach()
    if own is not None:
        return UnpackedDualTensor(primal, own.tangent)
    return UnpackedDualTensor(primal, _push_forward(tensor, duals) if _is_differentiable(tensor) else None)


def _register(target, dual: Tensor, tangent: Tensor) -> None:
    key = id(target)
    _duals[key] = _Dual(weakref.ref(target, lambda ref: _forget(key, ref)), tangent, dual.dtype)


def _forget(key: int, ref: weakref.ref) -> None:
    """Drop the entry of a dual whose target died (unless its id was reused by a newer dual)."""
    entry = _duals.get(key)
    if entry is not None and entry.target is ref:
        del _duals[key]


def _dual_of(target) -> _Dual | None:
    """The dual registered for ``target`` (a leaf tensor or a view's node), or None."""
    entry = _duals.get(id(target))
    return entry if entry is not None and entry.target() is target else None


def _reachable_duals(t: Tensor) -> tuple[list[tuple[object, _Dual]], bool]:
    """The duals ``(target, dual)`` that ``t``'s recorded graph reaches (``t`` included), and
    whether it also reaches a leaf requiring grad that is not a dual."""
    if not t.requires_grad:
        return [], False
    if t.grad_fn is None:
        dual = _dual_of(t)
        return ([], True) if dual is None else ([(t, dual)], False)
    duals, reaches_other = [], False
    pending, seen = [t.grad_fn], {id(t.grad_fn)}
    while pending:
        fn = pending.pop()
        target = fn.variable if type(fn) is AccumulateGrad else fn
        dual = _dual_of(target)
        if dual is not None:
            duals.append((target, dual))
        elif type(fn) is AccumulateGrad:
            reaches_other = True
        for next_fn, _ in fn.next_functions:
            if next_fn is None:
                continue
            # by the leaf, not its AccumulateGrad: that lives only while referenced, so each
            # edge to the leaf may show a new one
            key = id(next_fn.variable) if type(next_fn) is AccumulateGrad else id(next_fn)
            if key not in seen:
                seen.add(key)
                pending.append(next_fn)
    return duals, reaches_other


def _push_forward(y: Tensor, duals: list[tuple[object, _Dual]]) -> Tensor:
    """``J t``: the tangent of ``y`` from its duals' tangents, by the double-backward trick, in
    ``y``'s dtype promoted with the tangents wider than their primals (as forward mode gives it)."""
    inputs = [_as_input(target, dual) for target, dual in duals]
    tangents = [dual.tangent.to(x.dtype) for x, (_, dual) in zip(inputs, duals)]
    with enable_grad():
        (product,) = _forward_products([y], inputs, tangents, create_graph=False)
    (product,) = _in_tangent_dtype([product], inputs, [dual.tangent for _, dual in duals])
    return product


def _as_input(target, dual: _Dual) -> Tensor:
    """A tensor to differentiate with respect to for a dual's target: the leaf itself, or a
    stand-in whose history is the view's node (the dual view itself may be gone)."""
    if type(target) is not Node:
        return target
    stand_in = zeros(dual.tangent.shape, dtype=dual.dtype, device=dual.tangent.device)
    _set_history(stand_in, target, 0)
    return stand_in
