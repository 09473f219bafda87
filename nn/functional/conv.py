"""Convolutions (``conv1d/2d/3d``, ``conv_transpose1d/2d/3d``) and ``unfold``/``fold``.

A convolution is an im2col (``tensor.ops.window.im2col``) followed by one matmul with the
weight over the whole batch; a transposed convolution is the matmul followed by col2im
(``fold_windows``). Both are differentiable to any order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import tensor
from tensor import Tensor, autocast, float32, get_autocast_dtype, is_autocast_enabled
from tensor._factory import as_int, is_int
from tensor.ops.precision import round_to_dtype
from tensor.ops.window import fold_windows, im2col, unfold_windows, window_output_shape

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
           "unfold", "fold"]

IntOrTuple = int | Sequence[int]


def ntuple(value, n: int, name: str, op: str = "convolution") -> tuple:
    """``value`` (an int or a sequence of ``n`` ints) as an ``n``-tuple.

    Raises:
        RuntimeError: if a sequence has the wrong length.
    """
    if is_int(value):
        return (as_int(value, name),) * n
    value = tuple(int(v) for v in value)
    if len(value) == 1:
        return value * n
    if len(value) != n:
        raise RuntimeError(
            f"expected {name} to be a single integer value or a list of {n} values to match the "
            f"{op} dimensions, but got {name}={list(value)}"
        )
    return value


def check_input_dims(input: Tensor, nd: int, name: str) -> tuple[Tensor, bool]:
    """Accept ``nd + 1`` (unbatched) or ``nd + 2`` (batched) dims; return a batched input and
    whether a batch dim was added.

    Raises:
        RuntimeError: for any other number of dims.
    """
    if input.ndim == nd + 2:
        return input, False
    if input.ndim == nd + 1:
        return input.unsqueeze(0), True
    raise RuntimeError(
        f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, but got input of "
        f"size: {list(input.shape)}"
    )


def _fmt(sizes) -> str:
    return "(" + " x ".join(str(s) for s in sizes) + ")"


def _check_common(input, weight, bias, stride, dilation, groups, nd, name):
    if not isinstance(input, Tensor) or not isinstance(weight, Tensor):
        raise TypeError(f"{name}(): expected input and weight to be Tensors")
    if weight.ndim != nd + 2:
        raise RuntimeError(
            f"{name}: expected weight to be {nd + 2}-dimensional, but got weight of size "
            f"{list(weight.shape)} instead"
        )
    # Under autocast the GEMM casts input and weight (and _bias_as the bias) to one dtype, so
    # PyTorch checks their dtypes only after autocast has run.
    if not is_autocast_enabled(input.device.type):
        if input.dtype is not weight.dtype:
            raise RuntimeError(f"expected scalar type {_scalar_name(weight)} but found {_scalar_name(input)}")
        if bias is not None and bias.dtype is not input.dtype:
            raise RuntimeError(
                f"Input type ({_type_name(input)}) and bias type ({_type_name(bias)}) should be the same"
            )
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("non-positive dilation is not supported")
    if not isinstance(groups, int) or groups <= 0:
        raise RuntimeError(f"non-positive groups is not supported (got groups={groups})")
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != _out_channels(weight, groups, name)):
        raise RuntimeError(
            f"Given weight of size {list(weight.shape)}, expected bias to be 1-dimensional with "
            f"{_out_channels(weight, groups, name)} elements, but got bias of size {list(bias.shape)} instead"
        )


def _bias_as(bias, out):
    """The bias in the GEMM's result dtype: they differ only under autocast, which casts a
    convolution's bias with its other inputs (``_check_common`` refuses a mismatch otherwise)."""
    return bias if bias.dtype is out.dtype else bias.to(out.dtype)


def _out_channels(weight, groups, name):
    return weight.shape[1] * groups if name.startswith("conv_transpose") else weight.shape[0]


def _type_name(t: Tensor) -> str:
    return _scalar_name(t).lower().replace("char", "signed char").replace("byte", "unsigned char")


def _scalar_name(t: Tensor) -> str:
    names = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long",
             "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}
    return names.get(t.dtype.name, t.dtype.name)


def conv_padding(padding, kernel, dilation, stride, nd) -> tuple:
    """Per-dim ``(before, after)`` padding from an int, a tuple, ``'valid'`` or ``'same'``.

    Raises:
        RuntimeError: for an unknown string, negative padding, or ``'same'`` with a stride.
    """
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * nd
        if padding != "same":
            raise RuntimeError(f"Invalid padding string: {padding!r}")
        if any(s != 1 for s in stride):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        total = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return tuple((t // 2, t - t // 2) for t in total)  # the odd pixel goes after, as in PyTorch
    pads = ntuple(padding, nd, "padding")
    if any(p < 0 for p in pads):
        raise RuntimeError("negative padding is not supported")
    return tuple((p, p) for p in pads)


def _check_weight_groups(weight, groups) -> None:
    """The weight's dim 0 (output channels; input channels when transposed) splits into ``groups``."""
    if weight.shape[0] % groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
            f"but got weight of size [{list(weight.shape)}] instead"
        )


def _convnd(input, weight, bias, stride, padding, dilation, groups, nd, name):
    stride, dilation = ntuple(stride, nd, "stride"), ntuple(dilation, nd, "dilation")
    _check_common(input, weight, bias, stride, dilation, groups, nd, name)
    x, unbatched = check_input_dims(input, nd, name)
    in_per_group = weight.shape[1]
    kernel = tuple(weight.shape[2:])
    if weight.shape[0] == 0:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be at least 1 at dimension 0, but got weight of size "
            f"{list(weight.shape)} instead"
        )
    _check_weight_groups(weight, groups)
    if x.shape[1] != in_per_group * groups:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
            f"{list(x.shape)} to have {in_per_group * groups} channels, but got {x.shape[1]} "
            "channels instead"
        )
    pads = conv_padding(padding, kernel, dilation, stride, nd)
    padded = tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[2:], pads))
    effective = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    if any(e > p for e, p in zip(effective, padded)):
        raise RuntimeError(
            f"Calculated padded input size per channel: {_fmt(padded)}. Kernel size: {_fmt(effective)}. "
            "Kernel size can't be greater than actual input size"
        )
    geometry = (kernel, dilation, pads, stride, groups)
    low = _float32_gemm_dtype(x, weight, bias)
    if low is None:
        out = _conv_gemm(x, weight, bias, *geometry)
    else:  # Note [Autocast convolution]
        x, weight, bias = (None if t is None else _rounded(t, low) for t in (x, weight, bias))
        with autocast(x.device.type, enabled=False):
            out = _conv_gemm(x, weight, bias, *geometry).to(low)
    return out.squeeze(0) if unbatched else out


def _conv_gemm(x, weight, bias, kernel, dilation, pads, stride, groups):
    out_channels, in_per_group, nd = weight.shape[0], weight.shape[1], len(kernel)
    out_shape = window_output_shape(x.shape[2:], kernel, dilation, pads, stride)
    n, k_numel, positions = x.shape[0], math.prod(kernel), math.prod(out_shape)
    # One GEMM (per group) over the whole batch: (O, C*K) @ (C*K, L*N). The result is stored
    # as (O, *out, N); the (N, O, *out) view of it needs no copy, and the next im2col or
    # pooling reads it in long contiguous runs.
    cols = im2col(x, kernel, dilation, pads, stride)
    if groups == 1:
        out = weight.reshape(out_channels, in_per_group * k_numel) @ cols
    else:
        w = weight.reshape(groups, out_channels // groups, in_per_group * k_numel)
        out = w @ cols.reshape(groups, in_per_group * k_numel, positions * n)
    out = out.reshape((out_channels,) + out_shape + (n,)).movedim(-1, 0)
    if bias is not None:
        out = out + _bias_as(bias, out).reshape((1, out_channels) + (1,) * nd)
    return out


# Note [Autocast convolution]: numpy has no bfloat16 GEMM, so under CPU autocast the GEMM of a
# convolution runs as sgemm on float32 operands whatever dtype they are stored in (Note
# [Low-precision floats] in tensor/_dtype.py). Composed from autocast's casts, that means the
# im2col matrix rounded to bfloat16 and widened back in forward and again in backward, the
# product rounded before the bias is added (in float32, and rounded again), and the im2col
# gradient rounded to bfloat16 before col2im widens it. Here instead the input (before im2col:
# fewer elements), weight and bias are rounded to the region's dtype once, staying float32
# (``round_to_dtype``; a bfloat16 input is widened, exactly); the GEMM and bias run in float32
# with autocast off, and the result is rounded once to the region's dtype, which it keeps, as
# PyTorch's. That is the arithmetic of a bfloat16 convolution accumulating in float32, as
# PyTorch's CPU kernels do; its backward, like PyTorch's fused one, keeps the im2col gradient in
# float32, and float32 parameters get float32 gradients.
def _float32_gemm_dtype(x, weight, bias):
    """Autocast's dtype when a convolution of these tensors takes Note [Autocast convolution]'s
    route (autocast on, a device without low-precision GEMMs, inputs float32 or that dtype)."""
    device_type = x.device.type
    if not is_autocast_enabled(device_type) or x.device.backend.native_low_precision_gemm:
        return None
    low = get_autocast_dtype(device_type)
    if any(t is not None and t.dtype is not float32 and t.dtype is not low for t in (x, weight, bias)):
        return None
    return low


def _rounded(t, low):
    """``t``'s values in ``low`` precision, as float32 (exact for a ``low`` tensor)."""
    return round_to_dtype(t, low) if t.dtype is float32 else t.to(float32)


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: IntOrTuple = 1,
           padding: IntOrTuple | str = 0, dilation: IntOrTuple = 1, groups: int = 1) -> Tensor:
    """1-d convolution (cross-correlation) of ``(N, C_in, L)`` or ``(C_in, L)`` input with a
    ``(C_out, C_in / groups, k)`` weight. ``padding`` may be ``'valid'`` or ``'same'``.

    Raises:
        RuntimeError: with PyTorch's messages for a wrong number of dims, a channel count that
            does not match the weight, groups that do not divide the channels, a kernel larger
            than the padded input, a bias of the wrong size, or mismatched dtypes.
    """
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: IntOrTuple = 1,
           padding: IntOrTuple | str = 0, dilation: IntOrTuple = 1, groups: int = 1) -> Tensor:
    """2-d convolution of ``(N, C_in, H, W)`` or ``(C_in, H, W)`` input with a
    ``(C_out, C_in / groups, kH, kW)`` weight. Raises like ``conv1d``."""
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: IntOrTuple = 1,
           padding: IntOrTuple | str = 0, dilation: IntOrTuple = 1, groups: int = 1) -> Tensor:
    """3-d convolution of ``(N, C_in, D, H, W)`` input. Raises like ``conv1d``."""
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


def transpose_output_shape(in_shape, kernel, stride, padding, output_padding, dilation) -> tuple:
    """The spatial output size of a transposed convolution."""
    return tuple((i - 1) * s - 2 * p + d * (k - 1) + op + 1
                 for i, k, s, p, op, d in zip(in_shape, kernel, stride, padding, output_padding, dilation))


def _conv_transposend(input, weight, bias, stride, padding, output_padding, groups, dilation, nd, name):
    stride, dilation = ntuple(stride, nd, "stride"), ntuple(dilation, nd, "dilation")
    _check_common(input, weight, bias, stride, dilation, groups, nd, name)
    padding, output_padding = ntuple(padding, nd, "padding"), ntuple(output_padding, nd, "output_padding")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(op < 0 or (op >= s and op >= d) for op, s, d in zip(output_padding, stride, dilation)):
        raise RuntimeError(
            f"output padding must be smaller than either stride or dilation, but got "
            f"output_padding={list(output_padding)}, stride={list(stride)}, dilation={list(dilation)}"
        )
    x, unbatched = check_input_dims(input, nd, name)
    in_channels, out_per_group = weight.shape[0], weight.shape[1]
    kernel = tuple(weight.shape[2:])
    _check_weight_groups(weight, groups)
    if x.shape[1] != in_channels:
        raise RuntimeError(
            f"Given transposed=1, weight of size {list(weight.shape)}, expected input{list(x.shape)} "
            f"to have {in_channels} channels, but got {x.shape[1]} channels instead"
        )
    out_shape = transpose_output_shape(x.shape[2:], kernel, stride, padding, output_padding, dilation)
    if any(s <= 0 for s in out_shape):
        raise RuntimeError(
            f"Given input size per channel: {_fmt(x.shape[2:])}. Calculated output size per channel: "
            f"{_fmt(out_shape)}. Output size is too small"
        )
    n, positions, k_numel = x.shape[0], math.prod(x.shape[2:]), math.prod(kernel)
    in_per_group = in_channels // groups
    w = weight.reshape(groups, in_per_group, out_per_group * k_numel).mT  # (G, O/G*K, C/G)
    cols = w @ x.reshape(n, groups, in_per_group, positions)  # (N, G, O/G*K, L)
    cols = cols.reshape((n, groups * out_per_group) + kernel + tuple(x.shape[2:]))
    out = fold_windows(cols, out_shape, kernel, dilation, tuple((p, p) for p in padding), stride)
    if bias is not None:
        out = out + _bias_as(bias, out).reshape((1, groups * out_per_group) + (1,) * nd)
    return out.squeeze(0) if unbatched else out


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: IntOrTuple = 1,
                     padding: IntOrTuple = 0, output_padding: IntOrTuple = 0, groups: int = 1,
                     dilation: IntOrTuple = 1) -> Tensor:
    """1-d transposed convolution (the gradient of ``conv1d`` with respect to its input) of
    ``(N, C_in, L)`` input with a ``(C_in, C_out / groups, k)`` weight.

    Raises:
        RuntimeError: for a wrong number of dims, a channel mismatch, negative padding, or
            ``output_padding`` not smaller than the stride or the dilation.
    """
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups, dilation,
                             1, "conv_transpose1d")


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: IntOrTuple = 1,
                     padding: IntOrTuple = 0, output_padding: IntOrTuple = 0, groups: int = 1,
                     dilation: IntOrTuple = 1) -> Tensor:
    """2-d transposed convolution of ``(N, C_in, H, W)`` input with a
    ``(C_in, C_out / groups, kH, kW)`` weight. Raises like ``conv_transpose1d``."""
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups, dilation,
                             2, "conv_transpose2d")


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: IntOrTuple = 1,
                     padding: IntOrTuple = 0, output_padding: IntOrTuple = 0, groups: int = 1,
                     dilation: IntOrTuple = 1) -> Tensor:
    """3-d transposed convolution. Raises like ``conv_transpose1d``."""
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups, dilation,
                             3, "conv_transpose3d")


def _fold_geometry(kernel_size, dilation, padding, stride, nd):
    kernel = ntuple(kernel_size, nd, "kernel_size", "unfold")
    dilation, stride = ntuple(dilation, nd, "dilation", "unfold"), ntuple(stride, nd, "stride", "unfold")
    padding = ntuple(padding, nd, "padding", "unfold")
    if any(k <= 0 for k in kernel) or any(d <= 0 for d in dilation) or any(s <= 0 for s in stride):
        raise RuntimeError(
            f"kernel_size, dilation and stride should be greater than zero, but got kernel_size="
            f"{kernel}, dilation={dilation}, stride={stride}"
        )
    if any(p < 0 for p in padding):
        raise RuntimeError(f"padding should be non-negative, but got padding={padding}")
    return kernel, dilation, padding, stride


def _check_window_dtype(input: Tensor, kernel: str) -> None:
    """PyTorch's im2col/col2im take floating, complex and bool tensors, not integer ones."""
    if not (input.is_floating_point() or input.is_complex() or input.dtype is tensor.bool):
        raise NotImplementedError(f'"{kernel}_out_cpu" not implemented for \'{input.dtype.name}\'')


def unfold(input: Tensor, kernel_size: IntOrTuple, dilation: IntOrTuple = 1, padding: IntOrTuple = 0,
           stride: IntOrTuple = 1) -> Tensor:
    """Extract sliding blocks (im2col): ``(N, C, H, W)`` -> ``(N, C * kH * kW, L)``, where ``L``
    is the number of blocks. Unbatched ``(C, H, W)`` input gives ``(C * kH * kW, L)``.

    Raises:
        RuntimeError: for input that is not 3-D or 4-D, non-positive sizes, or a kernel that
            does not fit in the padded input.
        NotImplementedError: for an integer input.
    """
    if input.ndim not in (3, 4):
        raise RuntimeError(
            f"Input Error: Only 3D or 4D input Tensors are supported (got {input.ndim}D)"
        )
    _check_window_dtype(input, "im2col")
    x, unbatched = (input.unsqueeze(0), True) if input.ndim == 3 else (input, False)
    kernel, dilation, padding, stride = _fold_geometry(kernel_size, dilation, padding, stride, 2)
    pads = tuple((p, p) for p in padding)
    blocks = window_output_shape(x.shape[2:], kernel, dilation, pads, stride)
    if any(b < 1 for b in blocks):
        raise RuntimeError(
            f"Given input with spatial size {tuple(x.shape[2:])}, kernel_size={kernel}, dilation="
            f"{dilation}, padding={padding}, calculated shape of the array of sliding blocks as "
            f"{blocks}, but its components must be at least one."
        )
    cols = unfold_windows(x, kernel, dilation, pads, stride)
    out = cols.reshape(x.shape[0], x.shape[1] * math.prod(kernel), math.prod(blocks))
    return out.squeeze(0) if unbatched else out


def fold(input: Tensor, output_size: IntOrTuple, kernel_size: IntOrTuple, dilation: IntOrTuple = 1,
         padding: IntOrTuple = 0, stride: IntOrTuple = 1) -> Tensor:
    """Combine sliding blocks into an image (col2im), summing overlaps: the adjoint of ``unfold``.
    ``(N, C * kH * kW, L)`` -> ``(N, C, *output_size)``; unbatched 2-D input is accepted.

    Raises:
        RuntimeError: for input that is not 2-D or 3-D, a channel dim not divisible by the
            kernel size, or a block count that does not match ``output_size``.
        NotImplementedError: for an integer input.
    """
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported "
                           f"(got {input.ndim}D)")
    _check_window_dtype(input, "col2im")
    x, unbatched = (input.unsqueeze(0), True) if input.ndim == 2 else (input, False)
    output_size = ntuple(output_size, 2, "output_size", "fold")
    kernel, dilation, padding, stride = _fold_geometry(kernel_size, dilation, padding, stride, 2)
    k_numel = math.prod(kernel)
    if x.shape[1] % k_numel:
        raise RuntimeError(
            f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, "
            f"but got input.size(1)={x.shape[1]} and kernel_size={kernel}."
        )
    pads = tuple((p, p) for p in padding)
    blocks = window_output_shape(output_size, kernel, dilation, pads, stride)
    if math.prod(blocks) != x.shape[2] or any(b < 1 for b in blocks):
        raise RuntimeError(
            f"Given output_size={output_size}, kernel_size={kernel}, dilation={dilation}, padding="
            f"{padding}, stride={stride}, expected size of input's dimension 2 to match the calculated "
            f"number of sliding blocks {blocks[0]} * {blocks[1]} = {math.prod(blocks)}, but got "
            f"input.size(2)={x.shape[2]}."
        )
    cols = x.reshape((x.shape[0], x.shape[1] // k_numel) + kernel + blocks)
    out = fold_windows(cols, output_size, kernel, dilation, pads, stride)
    return out.squeeze(0) if unbatched else out
