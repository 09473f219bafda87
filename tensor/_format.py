"""``repr`` of tensors, in PyTorch's style."""

from __future__ import annotations

import numpy as np

from . import _dtype


def format_tensor(t) -> str:
    """``tensor([[1., 2.]], dtype=tensor.float64, requires_grad=True)`` and the like."""
    host = t._device.backend.to_numpy(t._data)
    if host.dtype in _dtype.LOW_PRECISION_NUMPY:  # bfloat16, float8 (ml_dtypes): printed as float32
        host = host.astype(np.float32)
    if host.dtype.kind in "fc":
        # PyTorch: "1., 2." for whole numbers, else 4 fixed decimals ("0.3000"), switching
        # to scientific notation for very small or widely spread magnitudes.
        finite = host[np.isfinite(host)]
        whole = bool(np.all(finite == np.round(finite)))
        body = np.array2string(host, separator=", ", prefix="tensor(", precision=4,
                               floatmode="maxprec_equal" if whole else "fixed")
    else:
        body = np.array2string(host, separator=", ", prefix="tensor(")
    extras = []
    if t._device.type != "cpu":
        extras.append(f"device='{t._device}'")
    float_default = _dtype.get_default_dtype()
    default = {"f": float_default, "c": _dtype.to_complex(float_default), "b": _dtype.bool_}.get(
        host.dtype.kind, _dtype.int64)
    if t.dtype is not default or t.numel() == 0 and t.dtype is not _dtype.get_default_dtype():
        extras.append(f"dtype={t.dtype!r}")
    if t.numel() == 0 and t.ndim > 1:
        extras.insert(0, f"size={tuple(t.shape)}")
    if t._grad_fn is not None:
        extras.append(f"grad_fn=<{t._grad_fn.name()}>")
    elif t._requires_grad:
        extras.append("requires_grad=True")
    return "tensor(" + ", ".join([body] + extras) + ")"
