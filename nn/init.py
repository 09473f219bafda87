"""``nn.init``: fill tensors in place with initial values (``torch.nn.init``).

Every function runs under ``no_grad`` (so it works on parameters), returns the tensor,
and takes an optional ``generator`` for reproducible draws. The random ones draw on the
tensor's device, with its generator by default (Note [Random numbers per device] in
tensor/_random.py): initialising a model on a GPU copies nothing from the host.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

import tensor
from tensor import Tensor

__all__ = [
    "calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_",
    "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_",
    "sparse_",
]


def _fill(t: Tensor, host: np.ndarray) -> Tensor:
    with tensor.no_grad():
        t.copy_(tensor.tensor(host, dtype=t.dtype))
    return t


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended gain for an activation: 1 for linear/sigmoid, 5/3 for tanh, sqrt(2) for
    relu, sqrt(2 / (1 + slope**2)) for leaky_relu, 3/4 for selu.

    Raises:
        ValueError: for an unknown nonlinearity or an invalid negative slope.
    """
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                  "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(t: Tensor) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight: ``size(1) * receptive field`` and ``size(0) * receptive field``.

    Raises:
        ValueError: for tensors with fewer than 2 dims.
    """
    if t.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = math.prod(t.shape[2:]) if t.ndim > 2 else 1
    return t.shape[1] * receptive, t.shape[0] * receptive


def _calculate_correct_fan(t: Tensor, mode: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of ['fan_in', 'fan_out']")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(t)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor_: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill with draws from U(a, b)."""
    with tensor.no_grad():
        return tensor_.uniform_(a, b, generator=generator)


def normal_(tensor_: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill with draws from N(mean, std**2)."""
    with tensor.no_grad():
        return tensor_.normal_(mean, std, generator=generator)


def trunc_normal_(tensor_: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator=None) -> Tensor:
    """Fill with draws from N(mean, std**2) truncated to [a, b], by inverting the normal CDF
    of uniform draws between the CDF's values at ``a`` and ``b``. The draws are made in float64
    and cast: in a low-precision dtype a draw rounded onto the end of erf's domain becomes
    +-inf, clamped to ``a`` or ``b`` (also in float32 for a window far in the tail).

    Raises:
        RuntimeError: if ``a > b``, as PyTorch (from ``uniform_``).
        ZeroDivisionError: if ``std == 0`` (a negative ``std`` acts as ``|std|``).
        NotImplementedError: for an integer or bool tensor.
    """
    if not (tensor_.is_floating_point() or tensor_.is_complex()):
        raise NotImplementedError(f'"normal_kernel_cpu" not implemented for \'{tensor_.dtype}\'')
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={a:g} > to={b:g}")
    low, high = sorted((_normal_cdf((a - mean) / std), _normal_cdf((b - mean) / std)))
    if high - low < 1e-3:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
                      "The distribution of values may be incorrect.", stacklevel=2)
    with tensor.no_grad():
        draws = tensor.empty(tensor_.shape, dtype=tensor.float64, device=tensor_.device)
        draws.uniform_(2 * low - 1, 2 * high - 1, generator=generator)  # erf's domain
        values = draws.erfinv_().mul_(abs(std) * math.sqrt(2.0)).add_(mean).clamp_(min=a, max=b)
        return tensor_.copy_(values)


def _normal_cdf(x: float) -> float:
    return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0


def constant_(tensor_: Tensor, val: float) -> Tensor:
    """Fill with ``val``."""
    with tensor.no_grad():
        tensor_.fill_(val)
    return tensor_


def ones_(tensor_: Tensor) -> Tensor:
    """Fill with ones."""
    return constant_(tensor_, 1.0)


def zeros_(tensor_: Tensor) -> Tensor:
    """Fill with zeros."""
    return constant_(tensor_, 0.0)


def eye_(tensor_: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity (ones on the diagonal).

    Raises:
        ValueError: for tensors that are not 2-D.
    """
    if tensor_.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill(tensor_, np.eye(*tensor_.shape))


def dirac_(tensor_: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3/4/5-D conv weight with the Dirac delta (convolution becomes the identity).

    Raises:
        ValueError: for other ranks, or out channels not divisible by ``groups``.
    """
    if tensor_.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    if tensor_.shape[0] % groups:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = tensor_.shape[0] // groups
    host = np.zeros(tensor_.shape)
    centre = tuple(s // 2 for s in tensor_.shape[2:])
    for g in range(groups):
        for d in range(min(out_per_group, tensor_.shape[1])):
            host[(g * out_per_group + d, d) + centre] = 1
    return _fill(tensor_, host)


def xavier_uniform_(tensor_: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot uniform: U(-a, a) with ``a = gain * sqrt(6 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor_)
    bound = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor_, -bound, bound, generator)


def xavier_normal_(tensor_: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot normal: N(0, std**2) with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor_)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor_, 0.0, std, generator)


def _kaiming_std(tensor_: Tensor, a: float, mode: str, nonlinearity: str) -> float | None:
    """``gain / sqrt(fan)`` for the He initialisers; None, after PyTorch's warning, for a zero-element tensor."""
    if 0 in tensor_.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return None
    fan = _calculate_correct_fan(tensor_, mode)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor_: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator=None) -> Tensor:
    """He uniform: U(-b, b) with ``b = gain * sqrt(3 / fan)``, ``gain = calculate_gain(nonlinearity, a)``.

    Raises:
        ValueError: for an unknown mode or nonlinearity, or tensors with fewer than 2 dims.
    """
    std = _kaiming_std(tensor_, a, mode, nonlinearity)
    if std is None:
        return tensor_
    bound = math.sqrt(3.0) * std  # PyTorch's order of operations
    return uniform_(tensor_, -bound, bound, generator)


def kaiming_normal_(tensor_: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator=None) -> Tensor:
    """He normal: N(0, std**2) with ``std = gain / sqrt(fan)``.

    Raises:
        ValueError: for an unknown mode or nonlinearity, or tensors with fewer than 2 dims.
    """
    std = _kaiming_std(tensor_, a, mode, nonlinearity)
    if std is None:
        return tensor_
    return normal_(tensor_, 0.0, std, generator)


def orthogonal_(tensor_: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Fill with a (semi-)orthogonal matrix (flattening trailing dims), scaled by ``gain``.

    Raises:
        ValueError: for tensors with fewer than 2 dims.
    """
    if tensor_.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor_.numel() == 0:
        return tensor_
    rows = tensor_.shape[0]
    cols = tensor_.numel() // rows
    flat = tensor.randn(rows, cols, generator=generator, dtype=tensor.float64, device=tensor_.device)
    if rows < cols:
        flat = flat.T
    q, r = tensor.linalg.qr(flat)
    q = q * r.diagonal().sign()
    if rows < cols:
        q = q.T
    with tensor.no_grad():
        return tensor_.copy_((q * gain).reshape(tensor_.shape))


def sparse_(tensor_: Tensor, sparsity: float, std: float = 0.01, generator=None) -> Tensor:
    """Fill a 2-D tensor with N(0, std**2) and zero a ``sparsity`` fraction of each column.

    Raises:
        ValueError: for tensors that are not 2-D.
    """
    if tensor_.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor_.shape
    zeros = int(math.ceil(sparsity * rows))
    with tensor.no_grad():
        tensor_.normal_(0.0, std, generator=generator)
        # per column, the first ``zeros`` rows of a random permutation (sorted random keys)
        keys = tensor.rand(rows, cols, generator=generator, device=tensor_.device)
        picked = keys.argsort(0)[:zeros]
        tensor_.scatter_(0, picked, tensor_.new_zeros(picked.shape))  # a zeros tensor: no host scalar
    return tensor_


def _deprecated(initializer):
    """PyTorch's old spelling of ``initializer`` (``normal`` for ``normal_``), which warns."""
    old, new = initializer.__name__[:-1], initializer.__name__

    def deprecated(*args, **kwargs):
        warnings.warn(f"`nn.init.{old}` is now deprecated in favor of `nn.init.{new}`.", FutureWarning, stacklevel=2)
        return initializer(*args, **kwargs)

    deprecated.__name__ = deprecated.__qualname__ = old
    deprecated.__doc__ = f"Deprecated (FutureWarning): ``{new}``."
    return deprecated


uniform, normal, constant, eye, dirac = map(_deprecated, (uniform_, normal_, constant_, eye_, dirac_))
xavier_uniform, xavier_normal = _deprecated(xavier_uniform_), _deprecated(xavier_normal_)
kaiming_uniform, kaiming_normal = _deprecated(kaiming_uniform_), _deprecated(kaiming_normal_)
orthogonal, sparse = _deprecated(orthogonal_), _deprecated(sparse_)
