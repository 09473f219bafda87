"""Helpers the optimizers' update rules share: real views of complex arrays, updates split into
blocks across the intra-op threads, weight decay, in-place ``lerp``/square average/``addcdiv``
rounded as PyTorch's, the Adam family's defaults, and step counters."""

from __future__ import annotations

from typing import Any

import tensor
from tensor import Tensor, _backend, _dispatch

from ._checks import check_betas, check_nonnegative


def real_view(array):
    """``array`` itself, or a complex array as a writable real view with each (real, imag) pair in
    a new last dim: torch updates a complex parameter, its gradient and its state as such real
    tensors (``view_as_real``'s layout, without the dispatcher: the update runs on arrays)."""
    if array.dtype.kind != "c":
        return array
    return array[..., None].view(array.real.dtype)


def as_real(value):
    """``value`` itself, or a complex tensor as a real view of it (see :func:`real_view`)."""
    if not (isinstance(value, Tensor) and value.is_complex()):
        return value
    return _dispatch.make(real_view(value._data), value._device, value._version_box)


def for_blocks(xp, arrays, update) -> None:
    """Call ``update(*blocks)`` on matching blocks of same-shaped ``arrays`` (a parameter and
    its gradient and state), split across the intra-op threads when they are large; on the
    whole arrays when any of them is not contiguous. The update must be elementwise."""
    if all(a.flags.c_contiguous for a in arrays):
        flat = [a.reshape(-1) for a in arrays]
        size = flat[0].size
        _backend.parallel_for(xp, size, size * len(flat), lambda block: update(*(f[block] for f in flat)))
    else:
        update(*arrays)


def effective_grad(xp, param, grad, weight_decay: float, maximize: bool):
    """The gradient (negated if ``maximize``) plus ``weight_decay * param``, as a raw array.

    Returns ``(array, owned)``; ``owned`` says the array is a fresh temporary the caller may overwrite.
    """
    if weight_decay != 0:
        out = xp.empty_like(param)
        xp.multiply(param, weight_decay, out=out)
        (xp.subtract if maximize else xp.add)(out, grad, out=out)
        return out, True
    if maximize:
        out = xp.empty_like(grad)
        xp.negative(grad, out=out)
        return out, True
    return grad, False


def decayed_grad(xp, param, grad, lr: float, weight_decay: float, decoupled: bool, maximize: bool):
    """:func:`effective_grad` as an array, but with ``decoupled`` weight decay (AdamW's) applied to
    ``param`` in place (``param *= 1 - lr * weight_decay``) instead of added to the gradient."""
    if decoupled:
        if weight_decay != 0:
            xp.multiply(param, 1 - lr * weight_decay, out=param)
        weight_decay = 0
    return effective_grad(xp, param, grad, weight_decay, maximize)[0]


def adam_defaults(lr: float, betas: tuple[float, float], eps: float, weight_decay: float, **options: Any) -> dict:
    """The ``defaults`` of an Adam-family optimizer: ``lr``, ``betas``, ``eps``, ``weight_decay``,
    then ``options`` as given.

    Raises:
        ValueError: "Invalid learning rate/epsilon value/beta parameter at index i/weight_decay
            value: ..." for out-of-range options, checked in that order (as torch).
    """
    check_nonnegative(lr=lr, eps=eps)
    check_betas(betas)
    check_nonnegative(weight_decay=weight_decay)
    return {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay, **options}


def lerp_(xp, target, end, weight: float, scratch) -> None:
    """``target += weight * (end - target)`` in place, with PyTorch's ``lerp`` formula (uses ``scratch``)."""
    xp.subtract(end, target, out=scratch)
    if abs(weight) < 0.5:
        xp.multiply(scratch, weight, out=scratch)
        xp.add(target, scratch, out=target)
    else:
        xp.multiply(scratch, 1 - weight, out=scratch)
        xp.subtract(end, scratch, out=target)


def square_avg_(xp, avg, grad, decay: float, scratch) -> None:
    """``avg = decay * avg + (1 - decay) * grad**2`` in place, rounding as PyTorch does (uses ``scratch``)."""
    xp.multiply(avg, decay, out=avg)
    xp.multiply(grad, 1 - decay, out=scratch)
    xp.multiply(scratch, grad, out=scratch)
    xp.add(avg, scratch, out=avg)


def addcdiv_(xp, target, numerator, denominator, value: float) -> None:
    """``target += value * numerator / denominator`` in place, rounding as PyTorch's ``addcdiv_``."""
    update = xp.empty_like(target)
    xp.multiply(numerator, value, out=update)
    xp.divide(update, denominator, out=update)
    xp.add(target, update, out=target)


def new_step() -> Tensor:
    """A fresh step counter: a float32 scalar tensor on the CPU, as PyTorch keeps it."""
    return tensor.tensor(0.0, dtype=tensor.float32, device="cpu")


def increment_step(step: Tensor) -> float:
    """Add one to a step counter in place and return its new value."""
    data = step._data
    data += 1
    step._version_box[0] += 1
    return float(data)
