"""``repr`` of tensors: PyTorch's ``torch/_tensor_str.py`` rules, applied to the host numpy array."""

from __future__ import annotations

import math

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


class _Formatter:
    """PyTorch's ``_Formatter``: one number format and one column width for all the values
    shown. Floats use fixed point, whole-number mode ("1.", "-0.") or scientific notation,
    chosen from the finite nonzero values only, so nan, inf and zeros never widen a column."""

    def __init__(self, values: np.ndarray):
        self.floating = values.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.reshape(-1)
        if not self.floating:
            self.max_width = max([1, *(len(str(v)) for v in flat.tolist())])
            return
        shown = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
        if shown.size == 0:
            return
        magnitudes = np.abs(shown)
        low, high = magnitudes.min(), magnitudes.max()
        self.int_mode = bool(np.all(shown == np.ceil(shown)))
        self.sci_mode = _options["sci_mode"]
        if self.sci_mode is None:
            self.sci_mode = bool(high / low > 1000.0 or high > 1.0e8 or low < 1.0e-4)
        precision = _options["precision"]
        if self.sci_mode:
            lengths = (len(f"{v:.{precision}e}") for v in shown.tolist())
        elif self.int_mode:
            lengths = (len(f"{v:.0f}") + 1 for v in shown.tolist())  # + 1 for the trailing "."
        else:
            lengths = (len(f"{v:.{precision}f}") for v in shown.tolist())
        self.max_width = max(self.max_width, *lengths)

    def format(self, value) -> str:
        """``value`` (a Python number) right-aligned to the column width."""
        precision = _options["precision"]
        if not self.floating:
            text = f"{value}"
        elif self.sci_mode:
            text = f"{value:{self.max_width}.{precision}e}"
        elif self.int_mode:
            text = f"{value:.0f}" + ("." if math.isfinite(value) else "")
        else:
            text = f"{value:.{precision}f}"
        return text.rjust(self.max_width)


def _format_value(value, real: _Formatter, imag: _Formatter | None) -> str:
    """One element: a real number, or a complex one as "1.+2.j" from its parts' formatters."""
    if imag is None:
        return real.format(value)
    imag_text = (imag.format(value.imag) + "j").lstrip()
    sign = "" if imag_text[0] in "+-" else "+"
    return real.format(value.real) + sign + imag_text


def _summarized_data(host: np.ndarray) -> np.ndarray:
    """PyTorch's ``get_summarized_data``: the elements a summarised repr shows (``edgeitems`` at
    each end of each long dim), from which the number format is chosen."""
    edge = _options["edgeitems"]
    if host.ndim == 0:
        return host
    if host.ndim == 1:
        # host[-0:] is all of it: PyTorch's quirk at edgeitems=0, which shows "..." alone anyway
        return np.concatenate((host[:edge], host[-edge:])) if host.shape[0] > 2 * edge else host
    if not edge:
        return host[(slice(0, 0),) * host.ndim]
    rows = np.concatenate((host[:edge], host[-edge:])) if host.shape[0] > 2 * edge else host
    return np.stack([_summarized_data(row) for row in rows])


def _vector_str(host: np.ndarray, indent: int, summarize: bool, real: _Formatter,
                imag: _Formatter | None) -> str:
    """A 1-d body, wrapped at ``linewidth`` with the columns PyTorch fits per line."""
    element_length = real.max_width + 2  # with ", "
    if imag is not None:
        element_length += imag.max_width + 1  # and "j"
    per_line = max(1, math.floor((_options["linewidth"] - indent) / element_length))
    edge = _options["edgeitems"]
    if summarize and not edge:
        data = ["..."]
    elif summarize and host.shape[0] > 2 * edge:
        data = ([_format_value(v, real, imag) for v in host[:edge].tolist()] + [" ..."]
                + [_format_value(v, real, imag) for v in host[-edge:].tolist()])
    else:
        data = [_format_value(v, real, imag) for v in host.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested_str(host: np.ndarray, indent: int, summarize: bool, real: _Formatter,
                imag: _Formatter | None) -> str:
    """The body of ``host`` at the nesting depth whose opening bracket sits at column ``indent``."""
    if host.ndim == 0:
        return _format_value(host.item(), real, imag)
    if host.ndim == 1:
        return _vector_str(host, indent, summarize, real, imag)
    edge, n = _options["edgeitems"], host.shape[0]
    if summarize and n > 2 * edge:
        shown = [*range(edge), None, *range(n - edge, n)]
    else:
        shown = range(n)
    slices = ["..." if i is None else _nested_str(host[i], indent + 1, summarize, real, imag)
              for i in shown]
    return "[" + ("," + "\n" * (host.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _tensor_str(host: np.ndarray, indent: int) -> str:
    """PyTorch's ``_tensor_str``: the bracketed values, summarised past ``threshold`` elements."""
    if host.size == 0:
        return "[]"
    summarize = host.size > _options["threshold"]

    def formatter(part: np.ndarray) -> _Formatter:
        return _Formatter(_summarized_data(part) if summarize else part)

    if host.dtype.kind == "c":
        return _nested_str(host, indent, summarize, formatter(host.real), formatter(host.imag))
    return _nested_str(host, indent, summarize, formatter(host), None)


def _suffixes(t) -> list[str]:
    """The ``device=``, ``size=``, ``dtype=`` and autograd notes after the values, as PyTorch's."""
    suffixes = []
    if t._device.type != "cpu":
        suffixes.append(f"device='{t._device}'")
    float_default = _dtype.get_default_dtype()
    if t.numel() == 0:
        if t.ndim != 1:
            suffixes.append(f"size={tuple(t.shape)}")
        if t.dtype is not float_default:  # no values to tell an int64 from a float
            suffixes.append(f"dtype={t.dtype!r}")
    else:
        if not _options["edgeitems"]:
            suffixes.append(f"size={tuple(t.shape)}")
        complex_default = _dtype.complex128 if float_default is _dtype.float64 else _dtype.complex64
        if t.dtype not in (float_default, complex_default, _dtype.int64, _dtype.bool_):
            suffixes.append(f"dtype={t.dtype!r}")
    if t._grad_fn is not None:
        suffixes.append(f"grad_fn=<{t._grad_fn.name()}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    return suffixes


def _add_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    """Append each suffix, starting a new line indented by ``indent`` where it would pass
    ``linewidth``."""
    parts = [text]
    # PyTorch's count, which runs 2 past the last line's length
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > _options["linewidth"]:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    return "".join(parts) + ")"


def format_tensor(t) -> str:
    """``tensor([[1., 2.]], dtype=tensor.float64, requires_grad=True)`` and the like, laid out
    by PyTorch's rules (``torch/_tensor_str.py``)."""
    host = t._device.backend.to_numpy(t._data)
    if host.dtype in _dtype.LOW_PRECISION_NUMPY:  # bfloat16, float8 (ml_dtypes): exact in float32
        host = host.astype(np.float32)
    prefix = "tensor("
    return _add_suffixes(prefix + _tensor_str(host, len(prefix)), _suffixes(t), len(prefix))
