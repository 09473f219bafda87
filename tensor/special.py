"""``tensor.special``: PyTorch's ``torch.special`` functions (those numpy-based formulas give).

>>> import tensor
>>> tensor.special.expit(tensor.tensor([0.0]))
tensor([0.5000])
"""

from __future__ import annotations

import math

from . import _dtype
from .ops.edge_grads import entr, logit, sinc, xlog1py, xlogy
from .ops.gamma import digamma, erfinv, lgamma, mvlgamma, polygamma
from .ops.math_extra import exp2
from .ops.reduction import logsumexp
from .ops.softmax import log_softmax, softmax
from .ops.special import _as_float, erf, erfc, erfcx
from .ops.special_extra import i0, i1
from .ops.special_extra import igamma as gammainc
from .ops.special_extra import igammac as gammaincc
from .ops.unary import expm1, log, log1p, round, sigmoid

__all__ = [
    "erf",
    "erfc",
    "erfcx",
    "erfinv",
    "expit",
    "logit",
    "xlogy",
    "xlog1py",
    "gammaln",
    "digamma",
    "psi",
    "polygamma",
    "multigammaln",
    "log1p",
    "expm1",
    "exp2",
    "sinc",
    "round",
    "softmax",
    "log_softmax",
    "logsumexp",
    "ndtr",
    "ndtri",
    "log_ndtr",
    "entr",
    "i0",
    "i1",
    "gammainc",
    "gammaincc",
]

gammaln = lgamma
psi = digamma
multigammaln = mvlgamma
_SQRT2 = math.sqrt(2.0)


def expit(input):
    """The logistic sigmoid ``1 / (1 + exp(-x))``."""
    return sigmoid(input)


def ndtr(input):
    """The standard normal cumulative distribution function."""
    return 0.5 * erfc(input * (-1 / _SQRT2))  # a product, not ``-input``: bool inputs too


def ndtri(input):
    """The inverse of ``ndtr`` (the standard normal quantile function), computed in float64
    (``2 p - 1`` would round small ``p`` away in float32)."""
    dtype = _as_float(input, "ndtri").dtype
    return (_SQRT2 * erfinv(2 * input.to(_dtype.float64) - 1)).to(dtype)


def log_ndtr(input):
    """``log(ndtr(x))`` (through erfc, so accurate in the left tail down to about x = -26)."""
    return log(ndtr(input))
