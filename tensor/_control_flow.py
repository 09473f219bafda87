"""``tensor.cond`` and ``tensor.while_loop``: PyTorch's structured if-else and loop
(``torch.cond``, ``torch.while_loop``), run eagerly (issue 16).

PyTorch traces both branches (the loop's body) when compiling; run eagerly it calls them as
Python would. Here they always run eagerly: a predicate is read on the host and the branch (the
body) is called, so gradients flow through them as through any Python ``if`` or ``while``.
"""

from __future__ import annotations

from collections.abc import Callable

from ._tensor import Tensor

__all__ = ["cond", "while_loop"]


def cond(pred: bool | int | float | Tensor, true_fn: Callable, false_fn: Callable, operands: tuple | list = ()):
    """``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)``.

    >>> import tensor
    >>> x = tensor.tensor([1.0, 2.0])
    >>> tensor.cond(x.sum() > 2, lambda t: t * 2, lambda t: t - 1, (x,))
    tensor([2., 4.])

    Raises:
        RuntimeError: for a ``pred`` that is neither a bool/number nor a one-element tensor, or
            ``operands`` that are not a tuple or list.
        TypeError: if a branch is not callable.
    """
    pred = _truth(pred)
    _check_callables("cond", true_fn, false_fn)
    if not isinstance(operands, (tuple, list)):
        raise RuntimeError(
            "Expect operands to be a tuple of possibly nested dict/list/tuple that only consists of "
            f"tensor leaves, but got {type(operands).__name__}."
        )
    return (true_fn if pred else false_fn)(*operands)


def while_loop(cond_fn: Callable, body_fn: Callable, carried_inputs: tuple | list) -> tuple:
    """``body_fn`` applied to the carried values while ``cond_fn`` of them holds; the final values.

    >>> import tensor
    >>> tensor.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x * 2), (0, tensor.ones(2)))
    (3, tensor([8., 8.]))

    Raises:
        RuntimeError: for ``carried_inputs`` that are not a tuple or list, a ``cond_fn`` result
            that is neither a bool/number nor a one-element tensor, or a ``body_fn`` result
            that does not match the carried values in number, or a tensor's shape or dtype (as
            PyTorch requires).
        TypeError: if ``cond_fn`` or ``body_fn`` is not callable.
    """
    _check_callables("while_loop", cond_fn, body_fn)
    if not isinstance(carried_inputs, (tuple, list)):
        raise RuntimeError(f"carried_inputs must be a tuple or list, got {type(carried_inputs).__name__}")
    values = tuple(carried_inputs)
    while _truth(cond_fn(*values)):
        out = body_fn(*values)
        out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        _check_carried(values, out)
        values = out
    return values


def _truth(pred) -> bool:
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got {pred}.")
        return bool(pred.item())
    if not isinstance(pred, (bool, int, float)):
        raise RuntimeError(f"Expected pred to be bool or tensor, but got {pred}.")
    return bool(pred)


def _check_callables(name: str, *fns) -> None:
    for fn in fns:
        if not callable(fn):
            raise TypeError(f"{name}: the functions must be callable, got {type(fn).__name__}")


def _check_carried(before: tuple, after: tuple) -> None:
    if len(after) != len(before):
        raise RuntimeError(f"while_loop: body_fn returned {len(after)} values for {len(before)} carried inputs")
    for k, (old, new) in enumerate(zip(before, after)):
        if isinstance(old, Tensor) and not (
            isinstance(new, Tensor) and new.shape == old.shape and new.dtype == old.dtype
        ):
            got = f"{new.dtype}{list(new.shape)}" if isinstance(new, Tensor) else type(new).__name__
            raise RuntimeError(
                f"while_loop: body_fn's output {k} is {got}, but the carried input is {old.dtype}{list(old.shape)}"
            )
