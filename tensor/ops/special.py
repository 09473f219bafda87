"""Special functions and fused primitives for ``nn``: erf, GELU, (log-)softmax, NLL loss,
linear and embedding.

Each is a primitive (one graph node) with its derivative beside it, written with Tensor ops
so that double backward works. ``nn.functional`` builds its layers and losses on these.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _autocast, _backend, _dispatch, _dtype
from . import dtype_checks, unary
from .reduction import wrap_dim
from .registry import defop

__all__ = ["erf", "erfc"]

# ---------------------------------------------------------------- erf
# A vectorized port of the FreeBSD/musl ``erf`` (Sun fdlibm, s_erf.c): piecewise rational
# approximations, accurate to about 1 ulp in float64.

_ERX = 8.45062911510467529297e-01
_EFX = 1.28379167095512586316e-01
_PP = (1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02,
       -5.77027029648944159157e-03, -2.37630166566501626084e-05)
_QQ = (1.0, 3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03,
       1.32494738004321644526e-04, -3.96022827877536812320e-06)
_PA = (-2.36211856075265944077e-03, 4.14856118683748331666e-01, -3.72207876035701323847e-01,
       3.18346619901161753674e-01, -1.10894694282396677476e-01, 3.54783043256182359371e-02,
       -2.16637559486879084300e-03)
_QA = (1.0, 1.06420880400844228286e-01, 5.40397917702171048937e-01, 7.18286544141962662868e-02,
       1.26171219808761642112e-01, 1.36370839120290507362e-02, 1.19844998467991074170e-02)
_RA = (-9.86494403484714822705e-03, -6.93858572707181764372e-01, -1.05586262253232909814e+01,
       -6.23753324503260060396e+01, -1.62396669462573470355e+02, -1.84605092906711035994e+02,
       -8.12874355063065934246e+01, -9.81432934416914548592e+00)
_SA = (1.0, 1.96512716674392571292e+01, 1.37657754143519042600e+02, 4.34565877475229228821e+02,
       6.45387271733267880336e+02, 4.29008140027567833386e+02, 1.08635005541779435134e+02,
       6.57024977031928170135e+00, -6.04244152148580987438e-02)
_RB = (-9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e+01,
       -1.60636384855821916062e+02, -6.37566443368389627722e+02, -1.02509513161107724954e+03,
       -4.83519191608651397019e+02)
_SB = (1.0, 3.03380607434824582924e+01, 3.25792512996573918826e+02, 1.53672958608443695994e+03,
       3.19985821950859553908e+03, 2.55305040643316442583e+03, 4.74528541206955367215e+02,
       -2.24409524465858183362e+01)


def _horner(z, coeffs):
    out = coeffs[-1] * z + coeffs[-2]
    for c in reversed(coeffs[:-2]):
        out *= z
        out += c
    return out


def _erfc_tail(xp, ax):
    """erfc(|x|) for 1.25 <= |x| < 28 (``ax`` is |x|, float64)."""
    s = 1.0 / (ax * ax)
    near = ax < 1 / 0.35
    r = xp.where(near, _horner(s, _RA), _horner(s, _RB))
    q = xp.where(near, _horner(s, _SA), _horner(s, _SB))
    # Split x*x into an exact high part and a small correction, as fdlibm does.
    z = (ax.view(xp.uint64) & xp.uint64(0xFFFFFFFF00000000)).view(xp.float64)
    return xp.exp(-z * z - 0.5625) * xp.exp((z - ax) * (z + ax) + r / q) / ax


# For float32/float16 a single rational approximation on [-4, 4] (Eigen's fast erf), evaluated
# in float64, is accurate to 1e-7 and several times faster.
_ALPHA = (-1.60960333262415e-02, -2.95459980854025e-03, -7.34990630326855e-04, -5.69250639462346e-05,
          -2.10102402082508e-06, 2.77068142495902e-08, -2.72614225801306e-10)
_BETA = (-1.42647390514189e-02, -7.37332916720468e-03, -1.68282697438203e-03, -2.13374055278905e-04,
         -1.45660718464996e-05)


def _erf_fast(xp, x):
    a = xp.array(x, dtype=xp.float64)  # a fresh array even for a 0-d input
    xp.clip(a, -4.0, 4.0, out=a)
    z = a * a
    p = _horner(z, _ALPHA)
    p *= a
    p /= _horner(z, _BETA)
    return p.astype(x.dtype)


def _erf_parts(xp, x, complement):
    if not complement and x.dtype != xp.float64:
        return _erf_fast(xp, x)
    # Every piece is evaluated on every element (each on inputs clamped into its own range) and
    # the right one picked with ``where``: boolean-mask indexing would need the mask's count on
    # the host, a synchronisation on a GPU.
    a = x.astype(xp.float64)
    ax = xp.abs(a)
    negative = a < 0
    small, mid, tail = ax < 0.84375, ax < 1.25, ax < 28.0
    v = xp.where(small, a, 0.0)
    z = v * v
    y_small = v + v * (_horner(z, _PP) / _horner(z, _QQ))
    y_mid = _ERX + _horner(xp.clip(ax, 0.84375, 1.25) - 1.0, _PA) / _horner(xp.clip(ax, 0.84375, 1.25) - 1.0, _QA)
    c_tail = _erfc_tail(xp, xp.clip(ax, 1.25, 28.0))
    sign = xp.where(xp.isnan(a), a, xp.sign(a))  # |x| >= 28, inf and nan
    if complement:
        out = xp.where(tail, xp.where(negative, 2.0 - c_tail, c_tail), 1.0 - sign)
        out = xp.where(mid, xp.where(negative, 1.0 + y_mid, 1.0 - y_mid), out)
        out = xp.where(small, 1.0 - y_small, out)
    else:
        out = xp.where(tail, xp.copysign(1.0 - c_tail, a), sign)
        out = xp.where(mid, xp.copysign(y_mid, a), out)
        out = xp.where(small, y_small, out)
    return out.astype(x.dtype, copy=False)


@defop("erf", saves=(0,))
def _erf(xp, a):
    return _erf_parts(xp, a, False)


@_erf.derivative
def _(node, g):
    (a,) = node.saved
    return (g * (2.0 / math.sqrt(math.pi)) * unary.exp(-(a * a)),)


@defop("erfc", saves=(0,))
def _erfc(xp, a):
    return _erf_parts(xp, a, True)


@_erfc.derivative
def _(node, g):
    (a,) = node.saved
    return (g * (-2.0 / math.sqrt(math.pi)) * unary.exp(-(a * a)),)


def _as_float(input, real_only: str | None = None):
    """``input``, or for an integer or bool tensor its copy in the default float dtype. bfloat16
    (ml_dtypes, kind "V") is floating point too: it stays bfloat16, as in PyTorch.

    Raises:
        NotImplementedError: for a complex ``input`` when ``real_only`` names the function (real
            functions such as erf or lgamma, which PyTorch does not implement for complex).
    """
    if input._data.dtype.kind == "f" or input.dtype.is_floating_point:
        return input
    if real_only is not None and input._data.dtype.kind == "c":
        raise dtype_checks.not_implemented_for(real_only, input.dtype)
    return input.to(_dtype.get_default_dtype())


def _via_float32(kernel, xp, a, *params):
    """``kernel(xp, a, *params)`` for a bfloat16 (or float8) array ``a``, computed on its float32
    copy and rounded back once, as PyTorch's CPU kernels compute these types: ml_dtypes' own
    ufuncs round after every step and are ~8x slower (Note [Low-precision floats] in
    tensor/_dtype.py)."""
    return kernel(xp, a.astype(np.float32), *params).astype(a.dtype)


def erf(input):
    """The error function ``2/sqrt(pi) * integral_0^x exp(-t^2) dt``, elementwise."""
    return _dispatch.apply_unary(_erf, _as_float(input, "erf"))


def erfc(input):
    """The complementary error function ``1 - erf(x)``, accurate for large ``x``."""
    return _dispatch.apply_unary(_erfc, _as_float(input, "erfc"))


# erfcx(x) = exp(x*x) * erfc(x) directly below x = 3; from there on (where exp(x*x) overflows from
# x = 26.6) Laplace's continued fraction erfcx(x) = 1 / (sqrt(pi) (x + (1/2) / (x + (2/2) / (x + ...)))),
# whose 24 terms are within 1e-14 of it at x = 3 and exact to rounding from x = 4.
_ERFCX_FRACTION_FROM = 3.0
_ERFCX_FRACTION_TERMS = 24


@defop("erfcx", saves=(0,), saves_output=True)
def _erfcx(xp, a):
    x = a.astype(xp.float64)
    near = xp.minimum(x, _ERFCX_FRACTION_FROM)
    direct = xp.exp(near * near) * _erf_parts(xp, near, True)
    far = xp.maximum(x, _ERFCX_FRACTION_FROM)
    fraction = far.copy()
    for k in range(_ERFCX_FRACTION_TERMS, 0, -1):
        fraction = far + (k / 2) / fraction
    out = xp.where(x < _ERFCX_FRACTION_FROM, direct, 1 / (math.sqrt(math.pi) * fraction))
    return out.astype(a.dtype, copy=False)


@_erfcx.derivative
def _(node, g):
    (a,) = node.saved
    return (g * (2 * a * node.output - 2 / math.sqrt(math.pi)),)


def erfcx(input):
    """The scaled complementary error function ``exp(x**2) * erfc(x)``, accurate for large ``x``
    (it overflows to inf only below x = -26.6, where its value exceeds the float64 range)."""
    return _dispatch.apply_unary(_erfcx, _as_float(input, "erfcx"))


# ---------------------------------------------------------------- GELU

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@defop("gelu", saves=(0,))
def _gelu(xp, a, approximate):
    if a.dtype.kind == "V":
        return _via_float32(_gelu.kernel, xp, a, approximate)
    if approximate == "tanh":
        inner = _SQRT_2_OVER_PI * (a + 0.044715 * a * a * a)
        return (0.5 * a * (1.0 + xp.tanh(inner))).astype(a.dtype, copy=False)
    cdf = _erf_parts(xp, a * a.dtype.type(1 / math.sqrt(2.0)), False)
    cdf += 1.0
    cdf *= 0.5
    cdf *= a
    return cdf


@_gelu.derivative
def _(node, g):
    (a,) = node.saved
    (approximate,) = node.params
    if approximate == "tanh":
        t = unary.tanh(_SQRT_2_OVER_PI * (a + 0.044715 * a * a * a))
        d_inner = _SQRT_2_OVER_PI * (1.0 + 3 * 0.044715 * a * a)
        return (g * (0.5 * (1.0 + t) + 0.5 * a * (1.0 - t * t) * d_inner),)
    cdf = 0.5 * (1.0 + erf(a * (1 / math.sqrt(2.0))))
    pdf = unary.exp(-0.5 * a * a) * _INV_SQRT_2PI
    return (g * (cdf + a * pdf),)


def gelu(input, approximate: str = "none"):
    """GELU, ``x * Phi(x)``; ``approximate='tanh'`` uses the tanh approximation.

    Raises:
        RuntimeError: for an ``approximate`` other than 'none' or 'tanh'.
    """
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh, got {approximate!r}")
    return _dispatch.apply_unary(_gelu, _as_float(input), (approximate,))


# ---------------------------------------------------------------- softmax / log_softmax


@defop("softmax", saves_output=True)
def _softmax(xp, a, dim):
    if a.dtype.kind == "V":
        return _via_float32(_softmax.kernel, xp, a, dim)
    if a.ndim == 0 or a.shape[dim] == 0:
        return xp.ones_like(a) if a.ndim == 0 else a.copy()
    e = a - a.max(axis=dim, keepdims=True)
    xp.exp(e, out=e)
    e /= e.sum(axis=dim, keepdims=True)
    return e


@_softmax.derivative
def _(node, g):
    (dim,) = node.params
    y = node.output
    if y.ndim == 0:
        return (g * 0.0,)
    return (y * (g - (g * y).sum(dim, keepdim=True)),)


@defop("log_softmax", saves_output=True)
def _log_softmax(xp, a, dim):
    if a.dtype.kind == "V":
        return _via_float32(_log_softmax.kernel, xp, a, dim)
    if a.ndim == 0 or a.shape[dim] == 0:
        return xp.zeros_like(a) if a.ndim == 0 else a.copy()
    s = a - a.max(axis=dim, keepdims=True)
    lse = xp.log(xp.exp(s).sum(axis=dim, keepdims=True))
    s -= lse
    return s


@_log_softmax.derivative
def _(node, g):
    (dim,) = node.params
    y = node.output
    if y.ndim == 0:
        return (g * 0.0,)
    return (g - y.exp() * g.sum(dim, keepdim=True),)


def _softmax_input(input, dim, dtype):
    if dtype is not None:
        input = input.to(dtype)
    return _as_float(input), wrap_dim(dim, input.ndim)


def softmax(input, dim: int, dtype=None):
    """``exp(x) / sum(exp(x))`` along ``dim``, as one fused, numerically stable op."""
    input, d = _softmax_input(input, dim, dtype)
    return _dispatch.apply_unary(_softmax, input, (d,))


def log_softmax(input, dim: int, dtype=None):
    """``x - logsumexp(x)`` along ``dim``, as one fused, numerically stable op."""
    input, d = _softmax_input(input, dim, dtype)
    return _dispatch.apply_unary(_log_softmax, input, (d,))


# ---------------------------------------------------------------- NLL loss


def _nll_weights(xp, target, weight, ignore_index, dtype):
    """Per-element weights (0 where ignored) and the safe (in-range) target."""
    keep = target != ignore_index
    safe = xp.where(keep, target, 0)
    w = keep.astype(dtype) if weight is None else weight[safe] * keep
    return w, safe


def _pick(xp, logp, safe):
    # The class dim is 1 (0 for an unbatched input with a 0-d target).
    if logp.ndim == 1:
        return logp[safe]
    return xp.take_along_axis(logp, xp.expand_dims(safe, 1), axis=1).squeeze(1)


@defop("nll_loss", saves=(1,))
def _nll_loss(xp, logp, target, weight, ignore_index, reduction):
    w, safe = _nll_weights(xp, target, weight, ignore_index, logp.dtype)
    losses = _pick(xp, logp, safe) * w
    losses = -losses
    if reduction == "none":
        return losses
    total = losses.sum(dtype=logp.dtype)
    if reduction == "sum":
        return total
    with np.errstate(invalid="ignore", divide="ignore"):  # every target ignored: nan, as PyTorch
        return total / w.sum(dtype=logp.dtype)


@_nll_loss.derivative
def _(node, g):
    (target,) = node.saved
    weight, ignore_index, reduction = node.params
    shape, dtype = node.input_meta[0]
    xp = target._device.backend.xp
    t = target._data
    w, safe = _nll_weights(xp, t, weight, ignore_index, dtype)
    if reduction == "mean":  # every target ignored: a zero gradient (the loss is nan), as PyTorch
        total = w.sum(dtype=dtype)
        w = w / xp.where(total == 0, 1, total)
    if len(shape) == 1:
        coef = xp.zeros(shape, dtype=dtype)
        coef[safe] = -w
    elif hasattr(xp, "put_along_axis"):
        coef = xp.zeros(shape, dtype=dtype)
        xp.put_along_axis(coef, xp.expand_dims(safe, 1), xp.expand_dims(-w, 1), axis=1)
    else:  # array libraries without put_along_axis: a one-hot mask along the class dim
        classes = xp.arange(shape[1]).reshape((1, -1) + (1,) * (len(shape) - 2))
        coef = (xp.expand_dims(safe, 1) == classes) * xp.expand_dims(-w, 1)
    coef = _dispatch.make(coef, target._device)
    if reduction == "none" and len(shape) > 1:
        g = g.unsqueeze(1)
    return g * coef, None


def nll_loss(logp, target, weight_array, ignore_index: int, reduction: str):
    """The negative log likelihood loss on log-probabilities ``logp`` (class dim 1, or 0 for a
    1-D input), with ``weight_array`` an array of class weights or None. Inputs are checked by
    ``nn.functional.nll_loss``."""
    return _dispatch.apply(_nll_loss, (logp, target), (weight_array, ignore_index, reduction))


@defop("binary_cross_entropy", saves=(0, 1))
def _binary_cross_entropy(xp, p, t):
    if p.dtype.kind == "V":  # bfloat16, float8: computed in float32 and rounded once
        return _binary_cross_entropy.kernel(xp, p.astype("float32"), t.astype("float32")).astype(p.dtype)
    with np.errstate(divide="ignore"):  # log(0): -inf, clamped below
        log_p = xp.maximum(xp.log(p), -100)
        log_q = xp.maximum(xp.log(1 - p), -100)
    return -(t * log_p + (1 - t) * log_q)


@_binary_cross_entropy.derivative
def _(node, g):
    # PyTorch's derivatives: finite where p is exactly 0 or 1 (the clamped logs' own derivative
    # would be 0 * inf = nan there)
    p, t = node.saved
    need_p, need_t = node.needs_input_grad
    grad_p = g * (p - t) / (p * (1 - p)).clamp(min=1e-12) if need_p else None
    grad_t = g * ((1 - p).log() - p.log()) if need_t else None
    return grad_p, grad_t


def binary_cross_entropy(p, t):
    """The elementwise loss ``-(t * log(p) + (1 - t) * log(1 - p))``, logs clamped at -100, as
    PyTorch's; inputs are checked by ``nn.functional.binary_cross_entropy``."""
    return _dispatch.apply(_binary_cross_entropy, (p, t))


# ---------------------------------------------------------------- linear


@defop("linear", saves=(0, 1))
def _linear(xp, x, w, b=None):
    if x.ndim > 2 and x.flags.c_contiguous:
        out = _backend.matmul(xp, x.reshape(-1, x.shape[-1]), w.T).reshape(x.shape[:-1] + (w.shape[0],))
    else:
        out = _backend.matmul(xp, x, w.T)
    if b is not None:
        out += b
    return out


@_linear.derivative
def _(node, g):
    x, w = node.saved
    needs = node.needs_input_grad
    gx = g @ w if needs[0] else None
    gw = gb = None
    if needs[1] or (len(needs) > 2 and needs[2]):
        g2 = g.reshape(-1, w.shape[0])
        if needs[1]:
            gw = g2.mT @ x.reshape(-1, w.shape[1])
        if len(needs) > 2 and needs[2]:
            gb = g2.sum(0)
    return (gx, gw) if len(needs) == 2 else (gx, gw, gb)


def linear(input, weight, bias=None):
    """``input @ weight.T + bias`` as one primitive (one matmul, no transposed copy).

    Raises:
        RuntimeError: if the feature sizes or dtypes do not match.
    """
    if input.ndim == 0 or weight.ndim != 2 or input.shape[-1] != weight.shape[1]:
        rows = math.prod(input.shape[:-1]) if input.ndim else 1
        cols = input.shape[-1] if input.ndim else 1
        w_shape = "x".join(map(str, weight.shape[::-1]))
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{cols} and {w_shape})")
    mixed = input.dtype is not weight.dtype or (bias is not None and bias.dtype is not weight.dtype)
    if mixed and not (_dispatch.autocast is not None and _autocast.will_cast("linear", input)):
        other = bias.dtype.name if input.dtype is weight.dtype else input.dtype.name
        raise RuntimeError(
            f"linear(): expected all tensors to have the same dtype, but got {weight.dtype.name} and {other}"
        )
    inputs = (input, weight) if bias is None else (input, weight, bias)
    return _dispatch.apply(_linear, inputs)


# ---------------------------------------------------------------- embedding


@defop("embedding", saves=(1,))
def _embedding(xp, weight, indices, padding_idx, scale_grad_by_freq):
    return xp.take(weight, indices, axis=0)


@_embedding.derivative
def _(node, g):
    (indices,) = node.saved
    padding_idx, scale_grad_by_freq = node.params
    num, dim = node.input_shapes[0]
    flat = indices.reshape(-1)
    g2 = g.reshape(-1, dim)
    xp = indices._device.backend.xp
    if padding_idx is not None or scale_grad_by_freq:
        scale = xp.ones(flat.shape, dtype=g2._data.dtype)
        if scale_grad_by_freq:
            counts = xp.bincount(flat._data, minlength=num)
            scale = scale / counts[flat._data]
        if padding_idx is not None:
            scale[flat._data == padding_idx] = 0
        g2 = g2 * _dispatch.make(scale[:, None], g._device)
    return g2.new_zeros((num, dim)).index_add(0, flat, g2), None


def embedding(weight, indices, padding_idx=None, scale_grad_by_freq: bool = False):
    """Rows of ``weight`` picked by the integer tensor ``indices`` (any shape); the row
    ``padding_idx`` gets no gradient. Inputs are checked by ``nn.functional.embedding``."""
    return _dispatch.apply(_embedding, (weight, indices), (padding_idx, scale_grad_by_freq))
