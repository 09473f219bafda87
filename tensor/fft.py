"""``tensor.fft``: PyTorch's ``torch.fft`` (discrete Fourier transforms) with gradients.

Three primitives do the work: ``fft_c2c`` (complex to complex over some dims), ``fft_r2c``
(one-sided, over the last requested dim) and ``fft_c2r`` (its inverse). Each one's derivative is
another transform with the dual normalisation (``backward`` and ``forward`` swap, ``ortho`` stays),
as in PyTorch; the n-d real transforms, ``hfft`` and ``ihfft`` are compositions of them.

    >>> import tensor
    >>> tensor.fft.rfft(tensor.tensor([1.0, 2.0, 3.0, 4.0]))
    tensor([10.+0.j, -2.+2.j, -2.+0.j], dtype=tensor.complex64)
"""

from __future__ import annotations

from . import _dispatch, _dtype
from ._creation import arange
from .ops.comparison import where
from .ops.complex_ops import complex, conj, real
from .ops.flips import roll
from .ops.join_split import cat
from .ops.reduction import wrap_dim
from .ops.registry import defop

__all__ = [
    "fft",
    "ifft",
    "rfft",
    "irfft",
    "fft2",
    "ifft2",
    "rfft2",
    "irfft2",
    "fftn",
    "ifftn",
    "rfftn",
    "irfftn",
    "hfft",
    "ihfft",
    "hfft2",
    "ihfft2",
    "hfftn",
    "ihfftn",
    "fftfreq",
    "rfftfreq",
    "fftshift",
    "ifftshift",
]

_NORMS = ("backward", "forward", "ortho")
_DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _check_norm(norm):
    norm = "backward" if norm is None else norm
    if norm not in _NORMS:
        raise RuntimeError(f'Invalid normalization mode: "{norm}" (expected "backward", "forward" or "ortho")')
    return norm


@defop("fft_c2c")
def _fft_c2c(xp, a, dims, norm, forward):
    out = (xp.fft.fftn if forward else xp.fft.ifftn)(a, axes=dims, norm=norm)
    return out.astype(a.dtype, copy=False)


_fft_c2c.derivative(lambda node, g: (_c2c(g, node.params[0], _DUAL[node.params[1]], not node.params[2]),))


def _c2c(x, dims, norm, forward):
    return _dispatch.apply_unary(_fft_c2c, x, (dims, norm, forward))


@defop("fft_r2c")
def _fft_r2c(xp, a, dim, norm):
    out = xp.fft.rfft(a, axis=dim, norm=norm)
    return out.astype(_dtype.to_complex(_dtype.from_numpy_dtype(a.dtype)).numpy, copy=False)


@_fft_r2c.derivative
def _(node, g):
    # The one-sided spectrum is the first n // 2 + 1 entries of the full one: pad with zeros.
    dim, norm = node.params
    n = node.input_shapes[0][dim]
    full = _resize(g, dim, n)
    return (real(_c2c(full, (dim,), _DUAL[norm], False)),)


@defop("fft_c2r")
def _fft_c2r(xp, a, dim, n, norm):
    out = xp.fft.irfft(a, n, axis=dim, norm=norm)
    return out.astype(_dtype.to_real(_dtype.from_numpy_dtype(a.dtype)).numpy, copy=False)


@_fft_c2r.derivative
def _(node, g):
    # Entries 1 .. n - m that have a mirror image in the Hermitian spectrum count twice.
    dim, n, norm = node.params
    m = node.input_shapes[0][dim]
    half = _dispatch.apply_unary(_fft_r2c, g, (dim, _DUAL[norm]))
    scale = [1.0] + [2.0] * (n - m) + [1.0] * (2 * m - n - 1)
    shape = [1] * g.ndim
    shape[dim] = m
    return (half * g.new_tensor(scale).reshape(shape),)


def _resize(x, dim, n):
    """``x`` cut or zero-padded to length ``n`` along ``dim`` (the ``n``/``s`` arguments)."""
    size = x.shape[dim]
    if n == size:
        return x
    if n < size:
        return x.narrow(dim, 0, n)
    pad = list(x.shape)
    pad[dim] = n - size
    return cat([x, x.new_zeros(tuple(pad))], dim)


def _as_complex(x):
    if x.dtype.is_complex:
        return x
    if x.dtype not in (_dtype.float32, _dtype.float64):
        x = x.to(_dtype.get_default_dtype())
    return complex(x, x.new_zeros(x.shape))  # its derivative takes the real part of the gradient


def _as_real(x, name):
    if x.dtype.is_complex:
        raise RuntimeError(f"{name} expects a real input tensor, but got {x.dtype.name}")
    return x if x.dtype.is_floating_point else x.to(_dtype.get_default_dtype())


def _dims_and_sizes(x, s, dim, name, at_least_one=False):
    """The transform dims and their lengths from PyTorch's ``s``/``dim`` arguments.

    Raises:
        RuntimeError: for more ``s`` than dims, repeated dims, ``s`` and ``dim`` of different
            lengths, a length below 1, or no dim where ``at_least_one`` (the real transforms).
        IndexError: for a dim out of range.
    """
    if isinstance(s, int):
        s = (s,)
    if dim is None:
        if s is not None and len(s) > x.ndim:
            raise RuntimeError(f"{name}: Got shape with {len(s)} values but input tensor only has {x.ndim} dimensions.")
        dims = tuple(range(x.ndim)) if s is None else tuple(range(x.ndim - len(s), x.ndim))
    else:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        dims = tuple(wrap_dim(d, x.ndim) for d in dims)
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"{name}: FFT dims must be unique, got {dim}")
    if at_least_one and not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    if s is None:
        sizes = tuple(x.shape[d] for d in dims)
    else:
        if len(s) != len(dims):
            raise RuntimeError(f"{name}: When given, dim and shape arguments must have the same length")
        sizes = tuple(x.shape[d] if n == -1 else n for n, d in zip(s, dims))
    for n in sizes:
        if n < 1:
            raise RuntimeError(f"{name}: Invalid number of data points ({n}) specified")
    return dims, sizes


def _complex_transform(x, s, dim, norm, forward, name):
    x = _as_complex(x)
    dims, sizes = _dims_and_sizes(x, s, dim, name)
    for d, n in zip(dims, sizes):
        x = _resize(x, d, n)
    return _c2c(x, dims, _check_norm(norm), forward)


def fft(input, n=None, dim: int = -1, norm=None):
    """The 1-d discrete Fourier transform along ``dim`` (``n`` points: cut or zero-padded)."""
    return _complex_transform(input, None if n is None else (n,), dim, norm, True, "fft")


def ifft(input, n=None, dim: int = -1, norm=None):
    """The 1-d inverse discrete Fourier transform."""
    return _complex_transform(input, None if n is None else (n,), dim, norm, False, "ifft")


def fftn(input, s=None, dim=None, norm=None):
    """The n-d discrete Fourier transform over ``dim`` (all dims, or the last ``len(s)``)."""
    return _complex_transform(input, s, dim, norm, True, "fftn")


def ifftn(input, s=None, dim=None, norm=None):
    """The n-d inverse discrete Fourier transform."""
    return _complex_transform(input, s, dim, norm, False, "ifftn")


def fft2(input, s=None, dim=(-2, -1), norm=None):
    """The 2-d discrete Fourier transform (``fftn`` over the last two dims)."""
    return fftn(input, s, dim, norm)


def ifft2(input, s=None, dim=(-2, -1), norm=None):
    """The 2-d inverse discrete Fourier transform."""
    return ifftn(input, s, dim, norm)


def rfftn(input, s=None, dim=None, norm=None):
    """The n-d transform of a real input; the last dim keeps only ``n // 2 + 1`` frequencies.

    Raises:
        RuntimeError: for a complex input.
    """
    x = _as_real(input, "rfftn")
    dims, sizes = _dims_and_sizes(x, s, dim, "rfftn", at_least_one=True)
    norm = _check_norm(norm)
    for d, n in zip(dims, sizes):
        x = _resize(x, d, n)
    out = _dispatch.apply_unary(_fft_r2c, x, (dims[-1], norm))
    return _c2c(out, dims[:-1], norm, True) if len(dims) > 1 else out


def irfftn(input, s=None, dim=None, norm=None):
    """The inverse of ``rfftn``: a real output, ``2 * (m - 1)`` long in the last dim unless ``s`` says."""
    x = _as_complex(input)
    dims, sizes = _dims_and_sizes(x, s, dim, "irfftn", at_least_one=True)
    norm = _check_norm(norm)
    last = sizes[-1] if s is not None and s[-1] != -1 else 2 * (x.shape[dims[-1]] - 1)
    if last < 1:
        raise RuntimeError(f"irfftn: Invalid number of data points ({last}) specified")
    for d, n in zip(dims[:-1], sizes[:-1]):
        x = _resize(x, d, n)
    if len(dims) > 1:
        x = _c2c(x, dims[:-1], norm, False)
    x = _resize(x, dims[-1], last // 2 + 1)
    return _dispatch.apply_unary(_fft_c2r, x, (dims[-1], last, norm))


def rfft(input, n=None, dim: int = -1, norm=None):
    """The 1-d transform of a real input: the ``n // 2 + 1`` non-negative frequencies."""
    return rfftn(input, None if n is None else (n,), (dim,), norm)


def irfft(input, n=None, dim: int = -1, norm=None):
    """The inverse of ``rfft``: a real signal of ``n`` points (``2 * (m - 1)`` by default)."""
    return irfftn(input, None if n is None else (n,), (dim,), norm)


def rfft2(input, s=None, dim=(-2, -1), norm=None):
    """``rfftn`` over the last two dims."""
    return rfftn(input, s, dim, norm)


def irfft2(input, s=None, dim=(-2, -1), norm=None):
    """``irfftn`` over the last two dims."""
    return irfftn(input, s, dim, norm)


def hfft(input, n=None, dim: int = -1, norm=None):
    """The transform of a Hermitian-symmetric signal given by its first half: a real spectrum."""
    return irfft(conj(_as_complex(input)), n, dim, _DUAL[_check_norm(norm)])


def ihfft(input, n=None, dim: int = -1, norm=None):
    """The inverse of ``hfft``: the first half of the spectrum of a real signal."""
    return conj(rfft(input, n, dim, _DUAL[_check_norm(norm)]))


def hfftn(input, s=None, dim=None, norm=None):
    """The n-d transform of a Hermitian-symmetric signal given by its first half along the last
    dim: a real spectrum (``irfftn`` of the conjugate with the dual normalisation)."""
    return irfftn(conj(_as_complex(input)), s, dim, _DUAL[_check_norm(norm)])


def ihfftn(input, s=None, dim=None, norm=None):
    """The inverse of ``hfftn``: the one-sided spectrum of a real signal.

    Raises:
        RuntimeError: for a complex input.
    """
    return conj(rfftn(input, s, dim, _DUAL[_check_norm(norm)]))


def hfft2(input, s=None, dim=(-2, -1), norm=None):
    """``hfftn`` over the last two dims."""
    return hfftn(input, s, dim, norm)


def ihfft2(input, s=None, dim=(-2, -1), norm=None):
    """``ihfftn`` over the last two dims."""
    return ihfftn(input, s, dim, norm)


def fftfreq(n: int, d: float = 1.0, *, dtype=None, device=None, requires_grad: bool = False):
    """The sample frequencies ``[0, 1, ..., n//2 - 1, -(n//2), ..., -1] / (d * n)`` (``n//2`` rounded up)."""
    dtype = _frequency_dtype("fftfreq", dtype)
    k = arange(n, device=device)
    k = where(k < (n + 1) // 2, k, k - n).to(dtype)
    return (k / (d * n)).requires_grad_(requires_grad)


def rfftfreq(n: int, d: float = 1.0, *, dtype=None, device=None, requires_grad: bool = False):
    """The non-negative sample frequencies ``[0, 1, ..., n // 2] / (d * n)``."""
    k = arange(n // 2 + 1, device=device).to(_frequency_dtype("rfftfreq", dtype))
    return (k / (d * n)).requires_grad_(requires_grad)


def _shift(input, dim, sign):
    dims = tuple(range(input.ndim)) if dim is None else ((dim,) if isinstance(dim, int) else tuple(dim))
    shifts = tuple(sign * (input.shape[d] // 2) for d in dims)
    return roll(input, shifts, dims) if dims else input


def fftshift(input, dim=None):
    """Move the zero frequency to the centre (roll by ``n // 2`` along ``dim``, all dims by default)."""
    return _shift(input, dim, 1)


def ifftshift(input, dim=None):
    """The inverse of ``fftshift``."""
    return _shift(input, dim, -1)


def _frequency_dtype(name: str, dtype):
    """The result dtype of ``fftfreq``/``rfftfreq``: ``dtype`` or the default, which must be a
    real float (PyTorch's CPU ``arange`` has no complex kernel).

    Raises:
        RuntimeError: for an integer or bool ``dtype``.
        NotImplementedError: for a complex ``dtype``.
    """
    if dtype is None:
        return _dtype.get_default_dtype()
    if dtype.is_complex:
        raise NotImplementedError(f"{name}: not implemented for {dtype.name}")
    if not dtype.is_floating_point:
        raise RuntimeError(f"{name} requires a floating point or complex dtype")
    return dtype
