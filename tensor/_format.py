"""``repr`` of tensors, in PyTorch's style."""

from __future__ import annotations

import sys

import numpy as np

from . import _dtype

# PyTorch's print options (``set_printoptions``) and their profiles
_options = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80, "sci_mode": None}
_PROFILES = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": float("inf"), "edgeitems": 3, "linewidth": 80},
}


def set_printoptions(precision: int | None = None, threshold: float | None = None, edgeitems: int | None = None,
                     linewidth: int | None = None, profile: str | None = None, sci_mode: bool | None = None) -> None:
    """Set how tensors print, as ``torch.set_printoptions``: ``profile`` ("default", "short" or
    "full") first, then each option given; ``sci_mode`` is always set (None: scientific notation
    when the magnitudes call for it).

    >>> import tensor
    >>> tensor.set_printoptions(precision=2)
    >>> tensor.tensor([1.12345])
    tensor([1.12])
    >>> tensor.set_printoptions(profile="default")

    Raises:
        ValueError: for an unknown ``profile`` (PyTorch ignores it).
    """
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions(): unknown profile {profile!r}; expected one of {list(_PROFILES)}")
        _options.update(_PROFILES[profile])
    given = {"precision": precision, "threshold": threshold, "edgeitems": edgeitems, "linewidth": linewidth}
    _options.update({k: v for k, v in given.items() if v is not None})
    _options["sci_mode"] = sci_mode


def _array2string(host: np.ndarray, **kwargs) -> str:
    threshold = _options["threshold"]
    return np.array2string(host, separator=", ", prefix="tensor(", max_line_width=_options["linewidth"],
                           threshold=sys.maxsize if threshold == float("inf") else int(threshold),
                           edgeitems=_options["edgeitems"], **kwargs)


def _summarized(host: np.ndarray) -> np.ndarray:
    """The elements a summarised repr shows (``edgeitems`` at each end of each long dim); all of
    them below the threshold. PyTorch picks the number format from these alone."""
    if host.size <= _options["threshold"]:
        return host
    edge = _options["edgeitems"]
    for axis, n in enumerate(host.shape):
        if n > 2 * edge:
            host = np.take(host, list(range(edge)) + list(range(n - edge, n)), axis=axis)
    return host


def _needs_scientific(finite: np.ndarray) -> bool:
    """PyTorch's rule: scientific notation when the nonzero magnitudes reach 1e8, go below 1e-4,
    or span more than a factor of 1000."""
    magnitudes = np.abs(finite[finite != 0]).astype(np.float64)
    if magnitudes.size == 0:
        return False
    low, high = magnitudes.min(), magnitudes.max()
    return bool(high / low > 1000.0 or high > 1.0e8 or low < 1.0e-4)


def format_tensor(t) -> str:
    """``tensor([[1., 2.]], dtype=tensor.float64, requires_grad=True)`` and the like."""
    host = t._device.backend.to_numpy(t._data)
    if host.dtype in _dtype.LOW_PRECISION_NUMPY:  # bfloat16, float8 (ml_dtypes): printed as float32
        host = host.astype(np.float32)
    if host.dtype.kind in "fc":
        # PyTorch: "1., 2." for whole numbers, else 4 fixed decimals ("0.3000"), switching
        # to scientific notation for very small or widely spread magnitudes.
        shown = _summarized(host)
        finite = shown[np.isfinite(shown)]
        whole = bool(np.all(finite == np.round(finite)))
        precision, sci_mode = _options["precision"], _options["sci_mode"]
        if sci_mode is None:
            sci_mode = _needs_scientific(finite)
        formatter = None
        if sci_mode:
            formatter = {"float_kind": lambda x: np.format_float_scientific(x, precision=precision, unique=False)}
        body = _array2string(host, precision=precision, floatmode="maxprec_equal" if whole else "fixed",
                             suppress_small=True, formatter=formatter)
    else:
        body = _array2string(host)
    body = body.replace(", ..., ", ",  ..., ")  # PyTorch's elided columns: " ..." between the commas
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
