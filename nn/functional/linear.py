"""Linear maps: linear, bilinear, and one_hot encoding."""

from __future__ import annotations

import tensor
from tensor import Tensor, _dispatch
from tensor.ops import special

__all__ = ["linear", "bilinear", "one_hot"]


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias``: one matmul on the transposed view (no copy), plus the bias.

    Raises:
        RuntimeError: "mat1 and mat2 shapes cannot be multiplied (...)" when the feature sizes
            differ, or when the dtypes differ.
    """
    return special.linear(input, weight, bias)


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y[..., o] = sum_ij input1[..., i] * weight[o, i, j] * input2[..., j] + bias[o]``.

    Raises:
        RuntimeError: if the feature sizes or leading dims do not match ``weight``.
    """
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-dimensional, but got {weight.ndim} dims")
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(
            f"bilinear(): input batch dimensions do not match: got {list(input1.shape[:-1])} and "
            f"{list(input2.shape[:-1])}"
        )
    if input1.shape[-1] != weight.shape[1]:
        raise RuntimeError(
            f"bilinear(): input1 size does not match weight size: got {input1.shape[-1]} but expected "
            f"{weight.shape[1]}"
        )
    if input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(
            f"bilinear(): input2 size does not match weight size: got {input2.shape[-1]} but expected "
            f"{weight.shape[2]}"
        )
    lead = input1.shape[:-1]
    x1 = input1.reshape(-1, input1.shape[-1])
    x2 = input2.reshape(-1, input2.shape[-1])
    out = tensor.einsum("bi,oij,bj->bo", x1, weight, x2)
    if bias is not None:
        out = out + bias
    return out.reshape(lead + (weight.shape[0],))


def one_hot(tensor_: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding: a new last dim of size ``num_classes`` (max + 1 when -1).

    Raises:
        RuntimeError: for a non-integer input, negative values, or a class >= ``num_classes``.
    """
    if tensor_.dtype is not tensor.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    data = tensor_._data
    if num_classes == -1:
        if tensor_.numel() == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(data.max()) + 1
    if tensor_.numel() and int(data.min()) < 0:
        raise RuntimeError("Class values must be non-negative.")
    if tensor_.numel() and int(data.max()) >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    xp = tensor_.device.backend.xp
    out = (data[..., None] == xp.arange(num_classes)).astype(xp.int64)
    return _dispatch.make(out, tensor_._device)
