"""Folding an eval-mode BatchNorm into the convolution or linear layer before it
(``fuse_conv_bn_eval``, ``fuse_linear_bn_eval`` and their weight forms), as
``torch.nn.utils.fusion``."""

from __future__ import annotations

import copy

import tensor
from tensor import Tensor

from ..modules.module import Module
from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]


def fuse_conv_bn_weights(
    conv_w: Tensor,
    conv_b: Tensor | None,
    bn_rm: Tensor,
    bn_rv: Tensor,
    bn_eps: float,
    bn_w: Tensor | None,
    bn_b: Tensor | None,
    transpose: bool = False,
) -> tuple[Parameter, Parameter]:
    """The weight and bias of one convolution equal to ``conv`` followed by the eval-mode batch
    norm with these statistics and affine parameters (``transpose`` for a transposed conv)."""
    with tensor.no_grad():
        conv_b = tensor.zeros_like(bn_rm) if conv_b is None else conv_b
        bn_w = tensor.ones_like(bn_rm) if bn_w is None else bn_w
        bn_b = tensor.zeros_like(bn_rm) if bn_b is None else bn_b
        scale = (bn_rv + bn_eps).rsqrt() * bn_w
        shape = [1] * conv_w.ndim
        shape[1 if transpose else 0] = -1
        fused_w = (conv_w * scale.reshape(shape)).to(conv_w.dtype)
        fused_b = ((conv_b - bn_rm) * scale + bn_b).to(conv_w.dtype)
    return Parameter(fused_w, conv_w.requires_grad), Parameter(fused_b, conv_b.requires_grad)


def fuse_conv_bn_eval(conv: Module, bn: Module, transpose: bool = False) -> Module:
    """A copy of ``conv`` whose weight and bias include ``bn`` (both in eval mode).

    Raises:
        AssertionError: if either module is training (as PyTorch).
    """
    assert not (conv.training or bn.training), "Fusion only for eval!"
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias, transpose
    )
    return fused


def fuse_linear_bn_weights(
    linear_w: Tensor, linear_b: Tensor | None, bn_rm: Tensor, bn_rv: Tensor, bn_eps: float, bn_w: Tensor, bn_b: Tensor
) -> tuple[Parameter, Parameter]:
    """The weight and bias of one linear layer equal to ``linear`` followed by the eval-mode
    batch norm."""
    with tensor.no_grad():
        linear_b = tensor.zeros_like(bn_rm) if linear_b is None else linear_b
        scale = bn_w * (bn_rv + bn_eps).rsqrt()
        fused_w = linear_w * scale.unsqueeze(-1)
        fused_b = (linear_b - bn_rm) * scale + bn_b
    return Parameter(fused_w, linear_w.requires_grad), Parameter(fused_b, linear_b.requires_grad)


def fuse_linear_bn_eval(linear: Module, bn: Module) -> Module:
    """A copy of ``linear`` whose weight and bias include ``bn`` (both in eval mode).

    Raises:
        AssertionError: if either module is training, or the sizes do not match.
    """
    assert not (linear.training or bn.training), "Fusion only for eval!"
    assert linear.out_features == bn.num_features or bn.num_features == 1, (
        "To fuse, linear.out_features == bn.num_features or bn.num_features == 1"
    )
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias
    )
    return fused
