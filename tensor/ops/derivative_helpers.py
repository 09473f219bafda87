"""Helpers that derivative rules share: conjugation under PyTorch's complex convention, products
computed on the arrays when nothing records or watches them, and the zero gradient of
piecewise-constant ops."""

from __future__ import annotations

from .. import _dispatch
from .._autograd_hooks import grad_mode


def conj_if_complex(t):
    """``t.conj()`` for a complex tensor or Python complex number, else ``t``: derivatives of
    holomorphic ops conjugate (PyTorch's convention: the gradient of a real loss is dL/dx + i dL/dy)."""
    if type(t) is complex:
        return t.conjugate()
    return t.conj() if _dispatch.is_tensor(t) and t._data.dtype.kind == "c" else t


def _conj_saved(node, g):
    """``node.saved``, conjugated when the op ran in complex (only then is ``g`` complex)."""
    if g._data.dtype.kind != "c":
        return node.saved
    return tuple(conj_if_complex(t) for t in node.saved)


def _on_arrays(g) -> bool:
    """Whether a derivative may multiply ``g`` on arrays (``_product``): nothing is recorded (grad
    mode is off: a backward without ``create_graph``), nothing watches the dispatcher (no
    ``tensor.compile`` tracer, profiler or autocast region), and ``g`` is real floating point (no
    conjugation; bfloat16 and float8, kind "V", take the dispatcher's float32 detour)."""
    return (
        not grad_mode.enabled
        and _dispatch.tracer is None
        and _dispatch.profiler is None
        and _dispatch.autocast is None
        and g._data.dtype.kind == "f"
    )


def _product(g, b):
    """``g * b`` for a derivative under ``_on_arrays``, with ``b`` an array on ``g``'s device (from
    ``node.saved_data`` or ``node.output_data``) or a Python number: the kernel runs on the arrays
    and the result has no history. An array of another dtype goes through the dispatcher, which
    promotes as the forward did."""
    device = g._device
    backend = device._backend or device.backend
    gd = g._data
    if isinstance(b, (int, float)):
        b = backend.scalar_operand(b, gd.dtype)
    elif b.dtype is not gd.dtype and b.dtype != gd.dtype:
        return g * _dispatch.make(b, device)
    if device.index is None:  # as in the dispatcher: on the CPU, launch is the plain call
        out = gd * b
    else:
        out = backend.launch(device.index, backend.xp.multiply, gd, b)
    if type(out) is not backend.array_type:  # numpy makes the product of 0-d arrays a scalar
        out = backend.xp.asarray(out)
    return _dispatch.make(out, device)


def _times_output(node, g):
    """``g * node.output``, on arrays where ``_on_arrays`` allows (exp's derivative)."""
    return _product(g, node.output_data) if _on_arrays(g) else g * node.output


def zeros_like_grad(g):
    """Zeros shaped like ``g``: the derivative of piecewise-constant ops, as in PyTorch."""
    return g.new_zeros(g.shape)
