"""Matrix products: matmul (``@``), mm, bmm, dot and einsum."""

from __future__ import annotations

import numpy as np

from .. import _autocast, _backend, _dispatch, _dtype
from .derivative_helpers import conj_if_complex
from .registry import defop

__all__ = ["matmul", "mm", "bmm", "dot", "einsum"]


@defop("matmul", saves=(0, 1))
def _matmul(xp, a, b):
    return _backend.matmul(xp, a, b)


@_matmul.derivative
def _(node, g):
    # For complex operands the adjoint conjugates: gA = G B^H, gB = A^H G (PyTorch's convention).
    a, b = (conj_if_complex(t) for t in node.saved)
    needs_a, needs_b = node.needs_input_grad
    ga = gb = None
    if a.ndim == 1 and b.ndim == 1:
        ga, gb = g * b, g * a
    elif a.ndim == 1:  # (k) @ (..., k, n) -> (..., n)
        ga = (g.unsqueeze(-2) @ b.mT).squeeze(-2) if needs_a else None
        gb = a.unsqueeze(-1) @ g.unsqueeze(-2) if needs_b else None
    elif b.ndim == 1:  # (..., m, k) @ (k) -> (..., m)
        ga = g.unsqueeze(-1) @ b.unsqueeze(-2) if needs_a else None
        gb = (a.mT @ g.unsqueeze(-1)).squeeze(-1) if needs_b else None
    else:
        ga = g @ b.mT if needs_a else None
        gb = a.mT @ g if needs_b else None
    return ga, gb


def _check_float_pair(name, a, b):
    if a.dtype is not b.dtype and not (_dispatch.autocast is not None and _autocast.will_cast(name, a)):
        raise RuntimeError(
            f"{name}: expected both operands to have the same dtype, but got {a.dtype.name} and {b.dtype.name}"
        )


def matmul(input, other):
    """Matrix product with numpy/PyTorch broadcasting of batch dims (``input @ other``).

    Raises:
        RuntimeError: naming both shapes when the inner dims differ, or for 0-d operands.
    """
    if input.ndim == 0 or other.ndim == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {input.ndim}D and {other.ndim}D"
        )
    _check_float_pair("matmul", input, other)
    k_a = input.shape[-1]
    k_b = other.shape[-2] if other.ndim > 1 else other.shape[0]
    if k_a != k_b:
        a_shape = "x".join(map(str, input.shape[-2:] if input.ndim > 1 else (1,) + input.shape))
        b_shape = "x".join(map(str, other.shape[-2:] if other.ndim > 1 else other.shape + (1,)))
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a_shape} and {b_shape})")
    batch_a, batch_b = input.shape[:-2], other.shape[:-2]
    for i in range(1, min(len(batch_a), len(batch_b)) + 1):
        sa, sb = batch_a[-i], batch_b[-i]
        if sa != sb and sa != 1 and sb != 1:
            raise RuntimeError(
                f"The size of tensor a ({sa}) must match the size of tensor b ({sb}) at "
                f"non-singleton dimension {max(len(batch_a), len(batch_b)) - i}"
            )
    return _dispatch.apply(_matmul, (input, other))


def mm(input, mat2):
    """2-D matrix product.

    Raises:
        RuntimeError: if either operand is not 2-D.
    """
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"mm: expected 2D tensors, got {input.ndim}D and {mat2.ndim}D")
    return matmul(input, mat2)


def bmm(input, mat2):
    """Batched matrix product of two 3-D tensors with equal batch sizes.

    Raises:
        RuntimeError: if the operands are not 3-D or the batch sizes differ.
    """
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError(f"batch1 must be a 3D tensor (got {input.ndim}D and {mat2.ndim}D)")
    if input.shape[0] != mat2.shape[0]:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: "
            f"[{input.shape[0]}, {input.shape[2]}] but got: [{mat2.shape[0]}, {mat2.shape[1]}]."
        )
    return matmul(input, mat2)


@_autocast.as_op("dot")
def dot(input, other):
    """Inner product of two 1-D tensors of equal length."""
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    return matmul(input, other)


@defop("einsum", saves=None)
def _einsum(xp, *arrays_and_equation):
    *arrays, equation = arrays_and_equation
    return xp.einsum(equation, *arrays, optimize=len(arrays) > 2)


@_einsum.derivative
def _(node, g):
    (equation,) = node.params
    operands = node.saved
    inputs, output = equation.split("->")
    subscripts = inputs.split(",")
    grads = []
    for i, (sub, needed) in enumerate(zip(subscripts, node.needs_input_grad)):
        if not needed:
            grads.append(None)
            continue
        others = [s for j, s in enumerate(subscripts) if j != i]
        letters = "".join(dict.fromkeys(sub))  # each letter once
        available = set(output).union(*others)
        kept = "".join(c for c in letters if c in available)
        grad = einsum(
            f"{','.join([output] + others)}->{kept}", g, *[conj_if_complex(t) for j, t in enumerate(operands) if j != i]
        )
        sizes = {c: n for c, n in zip(reversed(sub), reversed(operands[i].shape))}  # this operand's own sizes
        grad = _fit_to_sizes(grad, kept, letters, sizes)
        grads.append(_onto_diagonals(grad, letters, sub, equation) if letters != sub else grad)
    return tuple(grads)


def _fit_to_sizes(grad, kept: str, letters: str, sizes: dict):
    """``grad`` (subscripts ``kept``) laid out as ``letters`` with this operand's ``sizes``: summed
    over the dims it broadcast from size 1, expanded along the rest (and the letters summed away
    inside this operand alone)."""
    summed = tuple(d for d, c in enumerate(kept) if sizes[c] == 1 and grad.shape[d] != 1)
    if summed:
        grad = grad.sum(summed, keepdim=True)
    grad = grad.reshape([grad.shape[kept.index(c)] if c in kept else 1 for c in letters])
    target = tuple(sizes[c] for c in letters)
    return grad if grad.shape == target else grad.expand(target)


def _onto_diagonals(grad, letters: str, sub: str, equation: str):
    """``grad`` (one dim per letter of ``letters``) scattered onto the diagonals of an operand whose
    subscripts ``sub`` repeat letters: each repeat becomes a fresh letter tied to the first by an
    identity matrix."""
    spare = iter(c for c in _LETTERS if c not in equation)
    seen, spelled, identities = set(), "", []
    for c in sub:
        if c in seen:
            fresh = next(spare)
            spelled += fresh
            identities.append((c + fresh, grad.shape[letters.index(c)]))
        else:
            seen.add(c)
            spelled += c
    eyes = [_eye(grad, n) for _, n in identities]
    return einsum(f"{','.join([letters] + [pair for pair, _ in identities])}->{spelled}", grad, *eyes)


def _eye(like, n: int):
    xp = like._device.backend.xp
    return _dispatch.make(xp.eye(n, dtype=like._data.dtype), like._device)


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _from_sublists(args) -> tuple[str, tuple]:
    """The equation and operands of the sublist form ``einsum(op0, [0, 1], op1, [1, 2], [0, 2])``."""

    def letters(sublist):
        return "".join("..." if s is Ellipsis else _LETTERS[s] for s in sublist)

    operands, subs = args[0::2], args[1::2]
    if len(args) % 2:  # an output sublist closes the list
        return ",".join(letters(s) for s in subs) + "->" + letters(args[-1]), operands[:-1]
    return ",".join(letters(s) for s in subs), operands


def _explicit_equation(equation: str, operands) -> tuple[str, tuple]:
    """Spell out ``...`` with letters of their own and add the implicit output; expand the
    ellipsis dims to their common broadcast shape (numpy's einsum broadcasts only through ``...``)."""
    equation = equation.replace(" ", "")
    inputs, arrow, output = equation.partition("->")
    subscripts = inputs.split(",")
    if "..." in equation:
        if len(subscripts) != len(operands):
            raise RuntimeError(f"einsum(): {len(subscripts)} subscripts in {equation!r} for {len(operands)} operands")
        spare = [c for c in _LETTERS if c not in equation]
        counts = [t.ndim - (len(s) - 3) if "..." in s else 0 for s, t in zip(subscripts, operands)]
        width = max(counts)
        shapes = [
            t.shape[s.index(".") : s.index(".") + n] if n else () for s, t, n in zip(subscripts, operands, counts)
        ]
        batch = tuple(np.broadcast_shapes(*shapes))
        ellipsis = "".join(spare[:width])
        expanded = []
        for s, t, n in zip(subscripts, operands, counts):
            if n:
                at = s.index(".")
                shape = t.shape[:at] + batch[width - n :] + t.shape[at + n :]
                t = t.expand(shape) if shape != t.shape else t
            expanded.append(t)
        operands = tuple(expanded)
        subscripts = [s.replace("...", ellipsis[width - n :]) for s, n in zip(subscripts, counts)]
        output = output.replace("...", ellipsis) if arrow else ellipsis + output
        inputs = ",".join(subscripts)
        if not arrow:
            letters = inputs.replace(",", "")
            output += "".join(sorted(c for c in set(letters) if letters.count(c) == 1 and c not in ellipsis))
        return f"{inputs}->{output}", operands
    if arrow:
        return equation, operands
    letters = inputs.replace(",", "")
    return f"{inputs}->{''.join(sorted(c for c in set(letters) if letters.count(c) == 1))}", operands


def einsum(*args):
    """Einstein summation: ``einsum("bij,bjk->bik", a, b)``, with ``...`` for broadcast dims, or the
    sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])``.

    Raises:
        RuntimeError: if the number of operands does not match the equation.
    """
    if isinstance(args[0], str):
        equation, operands = args[0], args[1:]
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = tuple(operands[0])
    else:
        equation, operands = _from_sublists(args)
    equation, operands = _explicit_equation(equation, tuple(operands))
    n_subscripts = len(equation.split("->")[0].split(","))
    if n_subscripts != len(operands):
        raise RuntimeError(
            f"einsum(): more operands were provided than specified in the equation "
            f"({len(operands)} operands for {n_subscripts} subscripts in {equation!r})"
        )
    dtype = operands[0].dtype
    for t in operands[1:]:
        dtype = _dtype.promote_types(dtype, t.dtype)
    if len(operands) == 1 and _sums_integers(equation, dtype):
        dtype = _dtype.int64  # torch reduces with sum, which promotes bool and integers to int64
    operands = tuple(t if t.dtype is dtype else t.to(dtype) for t in operands)
    return _dispatch.apply(_einsum, operands, (equation,))


def _sums_integers(equation: str, dtype) -> bool:
    """Whether a one-operand ``equation`` sums over a letter of a bool or integer operand."""
    inputs, output = equation.split("->")
    return not (dtype.is_floating_point or dtype.is_complex) and bool(set(inputs) - set(output))
