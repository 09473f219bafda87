"""Convolutions: F.conv1d/2d/3d, F.conv_transpose1d/2d, F.unfold/F.fold, and the Conv1d, Conv2d,
Conv3d, ConvTranspose1d and ConvTranspose2d modules.

Values and gradients (input, weight, bias) against torch over a grid of geometries, float64
gradcheck and gradgradcheck, default initialisation bounds, repr, padding modes, and
PyTorch's error messages for bad shapes and arguments.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import autograd
import nn
import nn.functional as F
import tensor
from tests.helpers import assert_close
from tests.nn.oracle import copy_state, run_both, to_torch

RNG = np.random.default_rng(11)


def _randn(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def _compare_functional(torch, ours_fn, torch_fn, arrays, rtol=1e-7, atol=1e-9):
    """Run both on the same arrays (all requiring grad), backprop one cotangent, compare all."""
    ours_in = [tensor.tensor(a, requires_grad=True) for a in arrays]
    torch_in = [to_torch(torch, a, requires_grad=True) for a in arrays]
    out, ref = ours_fn(*ours_in), torch_fn(*torch_in)
    assert_close(out, ref.detach().numpy(), rtol=rtol, atol=atol)
    cot = RNG.standard_normal(ref.shape)
    (out * tensor.tensor(cot)).sum().backward()
    (ref * torch.from_numpy(cot)).sum().backward()
    for mine, theirs in zip(ours_in, torch_in):
        assert_close(mine.grad, theirs.grad.numpy(), rtol=rtol, atol=atol)


# (name, input shape, weight shape, keyword arguments); bias has weight.shape[0] entries.
CONV2D_CASES = [
    ("plain", (2, 3, 7, 6), (4, 3, 3, 3), {}),
    ("stride", (2, 3, 9, 8), (4, 3, 3, 2), dict(stride=2)),
    ("stride_pad_tuple", (2, 2, 8, 9), (3, 2, 3, 3), dict(stride=(2, 1), padding=(1, 2))),
    ("dilation", (1, 2, 9, 9), (2, 2, 3, 3), dict(dilation=(2, 3), padding=1)),
    ("groups", (2, 4, 6, 6), (6, 2, 3, 3), dict(groups=2, padding=1)),
    ("depthwise", (2, 3, 6, 5), (6, 1, 3, 2), dict(groups=3, stride=(1, 2))),
    ("same_odd", (2, 2, 6, 7), (3, 2, 3, 5), dict(padding="same")),
    ("same_even_dilated", (1, 2, 6, 7), (3, 2, 4, 2), dict(padding="same", dilation=2)),
    ("valid", (1, 2, 5, 5), (3, 2, 2, 2), dict(padding="valid")),
    ("one_by_one", (2, 5, 4, 4), (3, 5, 1, 1), {}),
    ("kernel_is_input", (2, 3, 4, 5), (2, 3, 4, 5), {}),
    ("unbatched", (3, 6, 6), (2, 3, 3, 3), dict(padding=1)),
]


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("name,x_shape,w_shape,kwargs", CONV2D_CASES, ids=[c[0] for c in CONV2D_CASES])
def test_conv2d_matches_torch(torch, name, x_shape, w_shape, kwargs, bias):
    arrays = [_randn(*x_shape), _randn(*w_shape)] + ([_randn(w_shape[0])] if bias else [])
    _compare_functional(torch, lambda x, w, *b: F.conv2d(x, w, *b, **kwargs),
                        lambda x, w, *b: torch.nn.functional.conv2d(x, w, *b, **kwargs), arrays)


CONV1D_CASES = [
    ("plain", (2, 3, 9), (4, 3, 3), {}),
    ("all", (2, 4, 12), (6, 2, 3), dict(stride=2, padding=2, dilation=2, groups=2)),
    ("same", (1, 2, 8), (3, 2, 4), dict(padding="same")),
    ("unbatched", (3, 7), (2, 3, 2), dict(stride=3)),
]


@pytest.mark.filterwarnings("ignore:Using padding='same'")  # torch's note about its own padded copy
@pytest.mark.parametrize("name,x_shape,w_shape,kwargs", CONV1D_CASES, ids=[c[0] for c in CONV1D_CASES])
def test_conv1d_matches_torch(torch, name, x_shape, w_shape, kwargs):
    arrays = [_randn(*x_shape), _randn(*w_shape), _randn(w_shape[0])]
    _compare_functional(torch, lambda x, w, b: F.conv1d(x, w, b, **kwargs),
                        lambda x, w, b: torch.nn.functional.conv1d(x, w, b, **kwargs), arrays)


def test_conv3d_matches_torch(torch):
    arrays = [_randn(1, 2, 5, 4, 6), _randn(4, 1, 2, 3, 2), _randn(4)]
    kwargs = dict(stride=(1, 2, 1), padding=(1, 0, 1), dilation=(2, 1, 1), groups=2)
    _compare_functional(torch, lambda x, w, b: F.conv3d(x, w, b, **kwargs),
                        lambda x, w, b: torch.nn.functional.conv3d(x, w, b, **kwargs), arrays)


# (name, input shape, weight shape (C_in, C_out / groups, *k), keyword arguments)
TRANSPOSE_CASES = [
    ("plain", (2, 3, 4, 5), (3, 2, 3, 3), {}),
    ("stride_pad", (2, 3, 4, 4), (3, 2, 3, 2), dict(stride=2, padding=1)),
    ("output_padding", (1, 2, 3, 4), (2, 3, 3, 3), dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2))),
    ("groups_dilation", (2, 4, 3, 3), (4, 1, 2, 3), dict(groups=2, dilation=(2, 1), stride=2)),
    ("output_padding_below_dilation", (1, 2, 3, 3), (2, 2, 2, 2), dict(dilation=3, output_padding=2)),
    ("unbatched", (3, 4, 4), (3, 2, 2, 2), dict(stride=2)),
]


@pytest.mark.parametrize("name,x_shape,w_shape,kwargs", TRANSPOSE_CASES, ids=[c[0] for c in TRANSPOSE_CASES])
def test_conv_transpose2d_matches_torch(torch, name, x_shape, w_shape, kwargs):
    out_channels = w_shape[1] * kwargs.get("groups", 1)
    arrays = [_randn(*x_shape), _randn(*w_shape), _randn(out_channels)]
    _compare_functional(torch, lambda x, w, b: F.conv_transpose2d(x, w, b, **kwargs),
                        lambda x, w, b: torch.nn.functional.conv_transpose2d(x, w, b, **kwargs), arrays)


def test_conv_transpose1d_matches_torch(torch):
    kwargs = dict(stride=3, padding=1, output_padding=2, groups=2, dilation=2)
    arrays = [_randn(2, 4, 5), _randn(4, 3, 3), _randn(6)]
    _compare_functional(torch, lambda x, w, b: F.conv_transpose1d(x, w, b, **kwargs),
                        lambda x, w, b: torch.nn.functional.conv_transpose1d(x, w, b, **kwargs), arrays)


def test_conv2d_float32_on_non_contiguous_input(torch, device):
    x = _randn(2, 3, 8, 7, dtype=np.float32)
    w = _randn(4, 3, 3, 3, dtype=np.float32)
    t = tensor.tensor(x.transpose(0, 1, 3, 2).copy(), device=device).transpose(2, 3)
    assert not t.is_contiguous()
    out = F.conv2d(t, tensor.tensor(w, device=device), stride=2, padding=1)
    ref = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), stride=2, padding=1)
    assert_close(out, ref.numpy(), rtol=1e-4, atol=1e-5)


def test_conv2d_on_an_empty_batch(device):
    out = F.conv2d(tensor.zeros(0, 3, 5, 5, device=device), tensor.zeros(2, 3, 3, 3, device=device))
    assert out.shape == (0, 2, 3, 3)


def test_conv_gradcheck_and_gradgradcheck():
    x = tensor.tensor(_randn(1, 2, 4, 4), requires_grad=True)
    w = tensor.tensor(_randn(2, 1, 2, 3), requires_grad=True)
    b = tensor.tensor(_randn(2), requires_grad=True)
    conv = lambda x, w, b: F.conv2d(x, w, b, stride=(1, 2), padding=1, dilation=(2, 1), groups=2)  # noqa: E731
    assert autograd.gradcheck(conv, (x, w, b))
    assert autograd.gradgradcheck(conv, (x, w, b))
    wt = tensor.tensor(_randn(2, 2, 2, 2), requires_grad=True)
    up = lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1)  # noqa: E731
    assert autograd.gradcheck(up, (x, wt, b))
    assert autograd.gradgradcheck(up, (x, wt, b))


def test_unfold_and_fold_match_torch(torch):
    kwargs = dict(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=(2, 1))
    _compare_functional(torch, lambda x: F.unfold(x, **kwargs), lambda x: torch.nn.functional.unfold(x, **kwargs),
                        [_randn(2, 3, 6, 7)])
    cols = torch.nn.functional.unfold(torch.zeros(2, 3, 6, 7), **kwargs).shape
    _compare_functional(torch, lambda c: F.fold(c, (6, 7), **kwargs),
                        lambda c: torch.nn.functional.fold(c, (6, 7), **kwargs), [_randn(*cols)])
    _compare_functional(torch, lambda x: F.unfold(x, 2), lambda x: torch.nn.functional.unfold(x, 2),
                        [_randn(3, 4, 4)])


W = np.zeros((4, 3, 3, 3))
CONV_ERRORS = [
    ("channels", (2, 2, 6, 6), W, {}, r"Given groups=1, weight of size \[4, 3, 3, 3\], expected input\[2, 2, 6, 6\] "
     r"to have 3 channels, but got 2 channels instead"),
    ("kernel_too_big", (1, 3, 2, 6), W, {}, r"Calculated padded input size per channel: \(2 x 6\)\. Kernel size: "
     r"\(3 x 3\)\. Kernel size can't be greater than actual input size"),
    ("input_dims", (6, 6), W, {}, r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d, but got input "
     r"of size: \[6, 6\]"),
    ("groups_weight", (1, 4, 6, 6), np.zeros((3, 2, 3, 3)), dict(groups=2),
     r"Given groups=2, expected weight to be divisible by 2 at dimension 0"),
    ("bias", (1, 3, 6, 6), W, dict(bias=np.zeros(3)), r"expected bias to be 1-dimensional with 4 elements, but "
     r"got bias of size \[3\]"),
    ("same_strided", (1, 3, 6, 6), W, dict(stride=2, padding="same"),
     r"padding='same' is not supported for strided convolutions"),
    ("bad_string", (1, 3, 6, 6), W, dict(padding="full"), r"Invalid padding string: 'full'"),
    ("stride_zero", (1, 3, 6, 6), W, dict(stride=0), r"non-positive stride is not supported"),
    ("negative_pad", (1, 3, 6, 6), W, dict(padding=-1), r"negative padding is not supported"),
    ("dilation_zero", (1, 3, 6, 6), W, dict(dilation=0), r"non-positive dilation is not supported"),
    ("stride_len", (1, 3, 6, 6), W, dict(stride=(1, 1, 1)), r"expected stride to be a single integer value or a "
     r"list of 2 values"),
    ("weight_dims", (1, 3, 6, 6), np.zeros((4, 3, 3)), {}, r"expected weight to be 4-dimensional"),
]


@pytest.mark.parametrize("name,x_shape,weight,kwargs,message", CONV_ERRORS, ids=[c[0] for c in CONV_ERRORS])
def test_conv2d_errors(name, x_shape, weight, kwargs, message):
    kwargs = {k: tensor.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    with pytest.raises(RuntimeError, match=message):
        F.conv2d(tensor.zeros(*x_shape, dtype=tensor.float64), tensor.tensor(weight), **kwargs)


def test_conv_errors_for_dtype_mismatch_and_transpose_arguments():
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        F.conv2d(tensor.zeros(1, 3, 5, 5, dtype=tensor.float64), tensor.zeros(4, 3, 3, 3))
    x = tensor.zeros(1, 3, 4, 4)
    with pytest.raises(RuntimeError, match=r"Given transposed=1, weight of size \[4, 3, 3, 3\], expected "
                                           r"input\[1, 3, 4, 4\] to have 4 channels, but got 3 channels instead"):
        F.conv_transpose2d(x, tensor.zeros(4, 3, 3, 3))
    with pytest.raises(RuntimeError, match="output padding must be smaller than either stride or dilation"):
        F.conv_transpose2d(x, tensor.zeros(3, 3, 3, 3), stride=2, output_padding=2)
    with pytest.raises(RuntimeError, match=r"calculated shape of the array of sliding blocks as \(0, 0\)"):
        F.unfold(x, 5)
    with pytest.raises(RuntimeError, match=r"expected size of input's dimension 2 to match the calculated number "
                                           r"of sliding blocks 3 \* 3 = 9, but got input.size\(2\)=8"):
        F.fold(tensor.zeros(1, 12, 8), (4, 4), 2)
    with pytest.raises(RuntimeError, match=r"divisible by the product of kernel_size, but got input.size\(1\)=13"):
        F.fold(tensor.zeros(1, 13, 9), (4, 4), 2)


# ------------------------------------------------------------------ modules

MODULE_CASES = [
    ("conv1d", lambda lib: lib.nn.Conv1d(4, 6, 3, stride=2, padding=1, groups=2), (2, 4, 9)),
    ("conv2d", lambda lib: lib.nn.Conv2d(3, 4, (3, 2), padding="same", dilation=2), (2, 3, 7, 6)),
    ("conv2d_nobias", lambda lib: lib.nn.Conv2d(2, 3, 3, bias=False, stride=(2, 1)), (1, 2, 7, 5)),
    ("conv2d_reflect", lambda lib: lib.nn.Conv2d(2, 3, 3, padding=2, padding_mode="reflect"), (1, 2, 5, 6)),
    ("conv2d_replicate", lambda lib: lib.nn.Conv2d(2, 3, (3, 2), padding=(1, 3), padding_mode="replicate"),
     (1, 2, 4, 4)),
    ("conv2d_circular", lambda lib: lib.nn.Conv2d(2, 3, 3, padding=(2, 1), padding_mode="circular"), (2, 2, 4, 5)),
    ("conv2d_reflect_same", lambda lib: lib.nn.Conv2d(2, 2, 4, padding="same", padding_mode="reflect"),
     (1, 2, 6, 6)),
    ("conv3d", lambda lib: lib.nn.Conv3d(2, 2, 2, padding=1), (1, 2, 3, 4, 3)),
    ("conv_transpose1d", lambda lib: lib.nn.ConvTranspose1d(2, 4, 3, stride=2, output_padding=1, groups=2),
     (2, 2, 5)),
    ("conv_transpose2d", lambda lib: lib.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, bias=False), (2, 3, 4, 4)),
]


class _Lib:
    def __init__(self, nn_module):
        self.nn = nn_module


@pytest.mark.parametrize("name,make,x_shape", MODULE_CASES, ids=[c[0] for c in MODULE_CASES])
def test_conv_modules_match_torch(torch, name, make, x_shape):
    ours, theirs = make(_Lib(nn)).double(), make(_Lib(torch.nn)).double()
    copy_state(ours, theirs, torch)
    run_both(ours, theirs, torch, _randn(*x_shape), rtol=1e-7, atol=1e-9)
    assert repr(ours) == repr(theirs)


def test_conv_transpose2d_output_size(torch):
    ours, theirs = nn.ConvTranspose2d(2, 3, 3, stride=3), torch.nn.ConvTranspose2d(2, 3, 3, stride=3)
    copy_state(ours, theirs, torch)
    x = _randn(1, 2, 4, 4, dtype=np.float32)
    out = ours(tensor.tensor(x), output_size=[13, 14])
    ref = theirs(torch.from_numpy(x), output_size=[13, 14])
    assert out.shape == (1, 3, 13, 14)
    assert_close(out, ref.detach().numpy(), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match=r"requested an output size of \[16, 12\], but valid sizes range from "
                                         r"\[12, 12\] to \[14, 14\]"):
        ours(tensor.tensor(x), output_size=(16, 12))


REPRS = [
    (lambda: nn.Conv2d(3, 4, 3), "Conv2d(3, 4, kernel_size=(3, 3), stride=(1, 1))"),
    (lambda: nn.Conv2d(4, 4, (3, 5), stride=2, padding=1, dilation=2, groups=2, bias=False, padding_mode="reflect"),
     "Conv2d(4, 4, kernel_size=(3, 5), stride=(2, 2), padding=(1, 1), dilation=(2, 2), groups=2, bias=False, "
     "padding_mode=reflect)"),
    (lambda: nn.Conv1d(3, 4, 3, padding="same"), "Conv1d(3, 4, kernel_size=(3,), stride=(1,), padding=same)"),
    (lambda: nn.ConvTranspose2d(3, 4, 3, stride=2, output_padding=1),
     "ConvTranspose2d(3, 4, kernel_size=(3, 3), stride=(2, 2), output_padding=(1, 1))"),
]


@pytest.mark.parametrize("make,text", REPRS)
def test_conv_repr(make, text):
    assert repr(make()) == text


@pytest.mark.parametrize("make,fan_in", [
    (lambda: nn.Conv2d(8, 16, 5), 8 * 25),
    (lambda: nn.Conv1d(6, 3, 3, groups=3), 2 * 3),
    (lambda: nn.ConvTranspose2d(4, 12, 3, groups=2), 6 * 9),  # fan_in from weight.shape[1], as in PyTorch
])
def test_conv_default_init_bounds(make, fan_in):
    layer = make()
    bound = 1 / math.sqrt(fan_in)
    for param in (layer.weight, layer.bias):
        values = param.detach().numpy()
        assert values.min() >= -bound and values.max() <= bound
        if values.size >= 16:  # spread over the range, not a constant
            assert values.max() - values.min() > bound
    weights = nn.Conv2d(64, 64, 3).weight.detach().numpy()  # many samples: U(-b, b) has std b/sqrt(3)
    assert abs(weights.std() - 1 / math.sqrt(64 * 9) / math.sqrt(3)) < 0.02 / math.sqrt(64 * 9)


def test_conv_module_factory_kwargs_and_parameters():
    layer = nn.Conv2d(2, 3, 3, dtype=tensor.float64, device="cpu")
    assert layer.weight.dtype is tensor.float64 and layer.weight.shape == (3, 2, 3, 3)
    assert [n for n, _ in layer.named_parameters()] == ["weight", "bias"]
    assert nn.Conv2d(2, 3, 3, bias=False).bias is None


CONSTRUCTOR_ERRORS = [
    (lambda: nn.Conv2d(3, 4, 3, groups=2), "in_channels must be divisible by groups"),
    (lambda: nn.Conv2d(4, 3, 3, groups=2), "out_channels must be divisible by groups"),
    (lambda: nn.Conv2d(4, 4, 3, groups=0), "groups must be a positive integer"),
    (lambda: nn.Conv2d(4, 4, 3, padding_mode="edge"), "padding_mode must be one of"),
    (lambda: nn.Conv2d(4, 4, 3, padding="full"), r"Invalid padding string 'full', should be one of"),
    (lambda: nn.Conv2d(4, 4, 3, stride=2, padding="same"), "padding='same' is not supported for strided"),
    (lambda: nn.ConvTranspose2d(4, 4, 3, padding_mode="reflect"),
     'Only "zeros" padding mode is supported for ConvTranspose2d'),
]


@pytest.mark.parametrize("make,message", CONSTRUCTOR_ERRORS)
def test_conv_constructor_errors(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_conv_module_input_errors():
    with pytest.raises(RuntimeError, match="expected input\\[1, 2, 8, 8\\] to have 3 channels, but got 2"):
        nn.Conv2d(3, 4, 3)(tensor.zeros(1, 2, 8, 8))
    with pytest.raises(RuntimeError, match="Padding value causes wrapping around more than once"):
        nn.Conv2d(1, 1, 3, padding=5, padding_mode="circular")(tensor.zeros(1, 1, 4, 4))
    with pytest.raises(RuntimeError, match=r"Padding size should be less than the corresponding input dimension, "
                                           r"but got: padding \(4, 4\)"):
        nn.Conv2d(1, 1, 3, padding=4, padding_mode="reflect")(tensor.zeros(1, 1, 4, 4))


def test_conv_relu_pool_chain_matches_torch(torch):
    # The layouts flow between layers (a conv output is stored batch-innermost and pooled in
    # place): check a small CNN end to end, values and every gradient.
    arrays = [_randn(3, 2, 12, 12), _randn(4, 2, 3, 3), _randn(4), _randn(5, 4, 3, 3), _randn(5)]

    def net(lib_f, x, w1, b1, w2, b2):
        h = lib_f.max_pool2d(lib_f.conv2d(x, w1, b1, padding=1).relu(), 2)
        h = lib_f.avg_pool2d(lib_f.conv2d(h, w2, b2).relu(), 2, ceil_mode=True)
        return lib_f.adaptive_avg_pool2d(h, 1) * h.sum()

    _compare_functional(torch, lambda *a: net(F, *a), lambda *a: net(torch.nn.functional, *a), arrays)


@pytest.mark.parametrize("kwargs", [dict(padding=(1, 2)), dict(padding="same", dilation=(1, 2)),
                                    dict(padding="valid"), dict(padding=1, padding_mode="reflect")])
def test_conv_forward_and_reversed_padding_like_torch(torch, kwargs):
    ours, theirs = nn.Conv2d(2, 3, 3, **kwargs), torch.nn.Conv2d(2, 3, 3, **kwargs)
    assert ours._reversed_padding_repeated_twice == theirs._reversed_padding_repeated_twice
    x = np.random.default_rng(0).standard_normal((1, 2, 6, 7)).astype("float32")
    w = np.ones((3, 2, 3, 3), dtype="float32")
    got = ours._conv_forward(tensor.tensor(x), tensor.tensor(w), None)
    assert_close(got, theirs._conv_forward(torch.tensor(x), torch.tensor(w), None).numpy(), atol=1e-5)


def test_conv_with_no_output_channels_is_refused():
    with pytest.raises(RuntimeError, match="expected weight to be at least 1 at dimension 0"):
        F.conv2d(tensor.ones(1, 2, 4, 4), tensor.ones(0, 2, 3, 3))


@pytest.mark.parametrize("call", [
    lambda: F.unfold(tensor.ones(1, 1, 4, 4, dtype=tensor.int64), 2),
    lambda: F.fold(tensor.ones(1, 4, 4, dtype=tensor.int64), (3, 3), 2),
])
def test_fold_and_unfold_refuse_integer_input(call):
    with pytest.raises(NotImplementedError, match="not implemented for 'int64'"):
        call()


def test_unfold_takes_bool_input_as_torch():
    assert F.unfold(tensor.ones(1, 1, 4, 4, dtype=tensor.bool), 2).shape == (1, 4, 9)
