"""``gradcheck`` and ``gradgradcheck``: compare autograd with float64 central differences."""

from __future__ import annotations

import warnings

import numpy as np

import tensor
from tensor import _dispatch

from .engine import grad

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck`` when analytical and numerical gradients disagree."""


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _differentiable_outputs(fn, inputs):
    outputs = _as_tuple(fn(*inputs))
    return [o for o in outputs if _dispatch.is_tensor(o) and o.requires_grad]


def _host(t) -> np.ndarray:
    """A host copy of a tensor on any device, flattened."""
    return t.detach().cpu().numpy().reshape(-1)


def _as_real(values: np.ndarray) -> np.ndarray:
    """A flattened output as real numbers: a complex one as its real parts, then its imaginary parts."""
    return np.concatenate([values.real, values.imag]) if np.iscomplexobj(values) else values


def _numerical_jacobian(fn, inputs, target, eps):
    """d(outputs)/d(target) by central differences, as one (numel_in, numel_out) matrix per output.

    Complex values follow PyTorch's convention (Note [Complex gradcheck])."""
    flat = target._data.reshape(-1) if target.is_contiguous() else None
    if flat is None:
        raise GradcheckError("gradcheck needs contiguous inputs to perturb")
    directions = (1, 1j) if target.is_complex() else (1,)
    columns = []
    with tensor.no_grad():
        for k in range(flat.size):
            column = None
            for direction in directions:
                original = flat[k].item()
                flat[k] = original + eps * direction
                plus = [o.detach().clone() for o in _as_tuple(fn(*inputs)) if _dispatch.is_tensor(o)]
                flat[k] = original - eps * direction
                minus = [o.detach().clone() for o in _as_tuple(fn(*inputs)) if _dispatch.is_tensor(o)]
                flat[k] = original
                slopes = [_as_real(_host((p - m) / (2 * eps))) for p, m in zip(plus, minus)]
                column = slopes if column is None else [c + 1j * s for c, s in zip(column, slopes)]
            columns.append(column)
    n_outputs = len(columns[0]) if columns else 0
    return [np.stack([c[j] for c in columns]) if columns else None for j in range(n_outputs)]


# Note [Complex gradcheck]
#     As in PyTorch, a complex output counts as two real ones (its real and its imaginary parts,
#     whose gradients backward gives for the seeds 1 and 1j), and the gradient of a real value
#     with respect to a complex input z = x + iy is dL/dx + i dL/dy: the numerical Jacobian
#     perturbs x and y in turn and combines the two slopes so.
def _analytical_jacobian(outputs, target):
    """One row per (real) output element: the gradient of that element with respect to ``target``."""
    jacobians = []
    for out in outputs:
        rows = []
        for unit in (1, 1j) if out.is_complex() else (1,):
            for k in range(out.numel()):
                seed = tensor.zeros_like(out, memory_format=tensor.contiguous_format)  # written through a flat view
                seed._data.reshape(-1)[k] = unit
                (g,) = grad(out, target, seed, retain_graph=True, allow_unused=True)
                rows.append(np.zeros(target.numel()) if g is None else _host(g))
        jacobians.append(np.stack(rows, axis=1) if rows else np.zeros((target.numel(), 0)))
    return jacobians


def gradcheck(fn, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, **_ignored) -> bool:
    """Check ``fn``'s gradients at ``inputs`` against central finite differences.

    Inputs that require grad should be float64 (or complex128); others are passed through
    unchanged. Complex inputs and outputs are checked as PyTorch checks them (Note [Complex
    gradcheck]).

    Raises:
        GradcheckError: naming the input, output and both Jacobians on a mismatch
            (unless ``raise_exception=False``, which returns False instead).
    """
    inputs = _as_tuple(inputs)
    targets = [t for t in inputs if _dispatch.is_tensor(t) and t.requires_grad]
    if not targets:
        raise ValueError("gradcheck expects at least one input tensor to require gradient")
    for t in targets:
        if t.dtype not in (tensor.float64, tensor.complex128):
            warnings.warn(f"gradcheck input of dtype {t.dtype.name} is not float64; the check may "
                          "fail from rounding alone", stacklevel=2)
    outputs = _differentiable_outputs(fn, inputs)
    for i, target in enumerate(targets):
        numerical = _numerical_jacobian(fn, inputs, target, eps)
        analytical = _analytical_jacobian(outputs, target)
        for j, (num, ana) in enumerate(zip(numerical, analytical)):
            if num is None or num.size == 0:
                continue
            if not np.allclose(ana, num, rtol=rtol, atol=atol):
                if not raise_exception:
                    return False
                raise GradcheckError(
                    f"Jacobian mismatch for output {j} with respect to input {i},\n"
                    f"numerical:{num}\nanalytical:{ana}\n"
                )
    return True


def gradgradcheck(fn, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5,
                  rtol: float = 1e-3, raise_exception: bool = True) -> bool:
    """Check second derivatives: ``gradcheck`` of the function (inputs, v) -> v^T J.

    Raises:
        GradcheckError: as ``gradcheck``.
    """
    inputs = _as_tuple(inputs)
    targets = [t for t in inputs if _dispatch.is_tensor(t) and t.requires_grad]
    if grad_outputs is None:
        outs = _differentiable_outputs(fn, inputs)
        generator = tensor.Generator().manual_seed(0)
        grad_outputs = [tensor.randn(o.shape, generator=generator, dtype=o.dtype, device=o.device,
                                     requires_grad=True) for o in outs]
    grad_outputs = list(_as_tuple(grad_outputs))
    n_inputs = len(inputs)

    def first_derivative(*args):
        ins, vs = args[:n_inputs], args[n_inputs:]
        # The numerical Jacobian evaluates this under no_grad; the inner gradient still needs a graph.
        with tensor.enable_grad():
            outs = _differentiable_outputs(fn, ins)
            diff_targets = [t for t in ins if _dispatch.is_tensor(t) and t.requires_grad]
            grads = grad(outs, diff_targets, list(vs), create_graph=True, allow_unused=True,
                         materialize_grads=True)
        return tuple(grads)

    del targets
    return gradcheck(first_derivative, inputs + tuple(grad_outputs), eps=eps, atol=atol,
                     rtol=rtol, raise_exception=raise_exception)
