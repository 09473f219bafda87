"""``tensor.cond``: PyTorch's structured if-else (``torch.cond``), run eagerly (issue 16).

PyTorch traces both branches when compiling; run eagerly it calls one. Here it always runs
eagerly: the predicate is read on the host and one branch is called, so gradients flow through
that branch as through any Python ``if``.
"""

from __future__ import annotations

from collections.abc import Callable

from ._tensor import Tensor

__all__ = ["cond"]


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
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got {pred}.")
        pred = pred.item()
    elif not isinstance(pred, (bool, int, float)):
        raise RuntimeError(f"Expected pred to be bool or tensor, but got {pred}.")
    for branch in (true_fn, false_fn):
        if not callable(branch):
            raise TypeError(f"cond: branches must be callable, got {type(branch).__name__}")
    if not isinstance(operands, (tuple, list)):
        raise RuntimeError(
            "Expect operands to be a tuple of possibly nested dict/list/tuple that only consists of "
            f"tensor leaves, but got {type(operands).__name__}."
        )
    return (true_fn if pred else false_fn)(*operands)
