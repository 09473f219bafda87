"""tensor.amp.custom_fwd / custom_bwd on a custom autograd.Function, against torch where installed:
the dtypes forward and backward compute in, inside and outside autocast, with and without
cast_inputs."""

from __future__ import annotations

import pytest

import autograd
import tensor


def _function(lib, function_base, cast_inputs):
    seen = {}

    class Product(function_base):
        @staticmethod
        @lib.amp.custom_fwd(device_type="cpu", cast_inputs=cast_inputs)
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            out = a @ b
            seen["forward"] = (str(a.dtype), str(out.dtype))
            return out

        @staticmethod
        @lib.amp.custom_bwd(device_type="cpu")
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            grad_a = grad @ b.t()
            seen["backward"] = str(grad_a.dtype)
            return grad_a, a.t() @ grad

    return Product, seen


def _story(lib, function_base, cast_inputs, autocast_on):
    Product, seen = _function(lib, function_base, cast_inputs)
    a = lib.ones(2, 3, requires_grad=True)
    b = lib.ones(3, 2, requires_grad=True)
    with lib.autocast("cpu", dtype=lib.bfloat16, enabled=autocast_on):
        out = Product.apply(a, b)
    out.float().sum().backward()
    return {k: tuple(v.split(".")[-1] for v in val) if isinstance(val, tuple) else val.split(".")[-1]
            for k, val in seen.items()}, str(a.grad.dtype).split(".")[-1]


@pytest.mark.parametrize("cast_inputs", [None, "float32"])
@pytest.mark.parametrize("autocast_on", [True, False])
def test_custom_fwd_bwd(cast_inputs, autocast_on):
    cast = None if cast_inputs is None else tensor.float32
    seen, grad_dtype = _story(tensor, autograd.Function, cast, autocast_on)
    if autocast_on and cast is None:  # forward's matmul autocasts; backward runs under autocast too
        assert seen == {"forward": ("float32", "bfloat16"), "backward": "bfloat16"}
    else:  # autocast off, or turned off by cast_inputs: float32 throughout
        assert seen == {"forward": ("float32", "float32"), "backward": "float32"}
    assert grad_dtype == "float32"


@pytest.mark.parametrize("cast_inputs", [None, "float32"])
@pytest.mark.parametrize("autocast_on", [True, False])
def test_custom_fwd_bwd_as_torch(torch, cast_inputs, autocast_on):
    ours = _story(tensor, autograd.Function, None if cast_inputs is None else tensor.float32, autocast_on)
    theirs = _story(torch, torch.autograd.Function, None if cast_inputs is None else torch.float32, autocast_on)
    assert ours == theirs


def test_device_type_must_be_a_string():
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        tensor.amp.custom_fwd(device_type=None)
