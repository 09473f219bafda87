"""Pooling: F.max_pool1d/2d/3d, F.avg_pool1d/2d/3d, F.adaptive_avg_pool1d/2d and the MaxPool,
AvgPool and AdaptiveAvgPool modules.

Values, returned indices and input gradients against torch over a grid of geometries
(stride, padding, dilation, ceil_mode, count_include_pad, divisor_override), float64
gradcheck and gradgradcheck, ties and NaN, empty batches, repr, and PyTorch's errors.
"""

from __future__ import annotations

import numpy as np
import pytest

import autograd
import nn
import nn.functional as F
import tensor
from tests.helpers import assert_close
from tests.nn.oracle import to_torch

RNG = np.random.default_rng(5)


def _randn(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def _compare(torch, ours_fn, torch_fn, x, rtol=1e-7, atol=1e-9):
    """Forward values (and indices, for tuples) and the input gradient, ours vs torch."""
    mine, theirs = tensor.tensor(x, requires_grad=True), to_torch(torch, x, requires_grad=True)
    out, ref = ours_fn(mine), torch_fn(theirs)
    if isinstance(ref, tuple):
        assert_close(out[1], ref[1].numpy())
        out, ref = out[0], ref[0]
    assert_close(out, ref.detach().numpy(), rtol=rtol, atol=atol)
    cot = RNG.standard_normal(ref.shape)
    (out * tensor.tensor(cot)).sum().backward()
    (ref * torch.from_numpy(cot)).sum().backward()
    assert_close(mine.grad, theirs.grad.numpy(), rtol=rtol, atol=atol)


# (name, input shape, keyword arguments) shared by max_pool2d (with dilation) and avg_pool2d.
POOL2D_CASES = [
    ("k2", (2, 3, 8, 8), dict(kernel_size=2)),
    ("k3_s2", (2, 2, 9, 7), dict(kernel_size=3, stride=2)),
    ("k3_s1_p1", (1, 3, 6, 5), dict(kernel_size=3, stride=1, padding=1)),
    ("rect", (2, 2, 7, 9), dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 0))),
    ("ceil", (1, 2, 7, 8), dict(kernel_size=3, stride=2, ceil_mode=True)),
    ("ceil_pad", (2, 1, 6, 7), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("ceil_big_stride", (1, 1, 5, 5), dict(kernel_size=2, stride=3, ceil_mode=True)),
    ("uneven", (1, 2, 5, 7), dict(kernel_size=2)),
    ("unbatched", (3, 6, 6), dict(kernel_size=2, stride=1)),
    ("stride_list_empty", (1, 1, 4, 4), dict(kernel_size=2, stride=[])),
]
IDS = [c[0] for c in POOL2D_CASES]


# Every case undilated, and dilated where the dilated window still fits the input.
MAX_CASES = [(f"{name}_d{d}", shape, dict(kwargs, dilation=d)) for name, shape, kwargs in POOL2D_CASES
             for d in (1, 2) if d == 1 or min(shape[-2:]) >= 7]


@pytest.mark.parametrize("name,shape,kwargs", MAX_CASES, ids=[c[0] for c in MAX_CASES])
def test_max_pool2d_matches_torch(torch, name, shape, kwargs):
    kwargs = dict(kwargs, return_indices=True)
    _compare(torch, lambda x: F.max_pool2d(x, **kwargs), lambda x: torch.nn.functional.max_pool2d(x, **kwargs),
             _randn(*shape))


@pytest.mark.parametrize("count_include_pad", [True, False])
@pytest.mark.parametrize("name,shape,kwargs", POOL2D_CASES, ids=IDS)
def test_avg_pool2d_matches_torch(torch, name, shape, kwargs, count_include_pad):
    kwargs = dict(kwargs, count_include_pad=count_include_pad)
    _compare(torch, lambda x: F.avg_pool2d(x, **kwargs), lambda x: torch.nn.functional.avg_pool2d(x, **kwargs),
             _randn(*shape))


def test_avg_pool2d_divisor_override_matches_torch(torch):
    kwargs = dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, divisor_override=4)
    _compare(torch, lambda x: F.avg_pool2d(x, **kwargs), lambda x: torch.nn.functional.avg_pool2d(x, **kwargs),
             _randn(2, 3, 7, 6))


ONE_D_AND_THREE_D = [
    ("max_pool1d", dict(kernel_size=3, stride=2, padding=1, dilation=2, ceil_mode=True, return_indices=True),
     (2, 3, 11)),
    ("max_pool1d", dict(kernel_size=2), (3, 7)),
    ("avg_pool1d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False), (2, 3, 10)),
    ("max_pool3d", dict(kernel_size=(2, 3, 2), stride=(1, 2, 2), padding=(1, 1, 0), return_indices=True),
     (1, 2, 4, 5, 6)),
    ("avg_pool3d", dict(kernel_size=2, stride=(2, 1, 2), padding=1, count_include_pad=False), (1, 2, 4, 5, 6)),
]


@pytest.mark.parametrize("name,kwargs,shape", ONE_D_AND_THREE_D, ids=[c[0] for c in ONE_D_AND_THREE_D])
def test_1d_and_3d_pooling_match_torch(torch, name, kwargs, shape):
    _compare(torch, lambda x: getattr(F, name)(x, **kwargs),
             lambda x: getattr(torch.nn.functional, name)(x, **kwargs), _randn(*shape))


ADAPTIVE_CASES = [
    ("divisible", (2, 3, 8, 6), (4, 3)),
    ("overlapping_bins", (2, 2, 7, 5), (3, 4)),
    ("global", (2, 3, 5, 6), 1),
    ("upsample", (1, 2, 3, 2), (5, 4)),
    ("keep_dim", (1, 2, 6, 7), (None, 3)),
    ("unbatched", (3, 7, 7), 4),
    ("empty_batch", (0, 3, 4, 4), 2),
]


@pytest.mark.parametrize("name,shape,size", ADAPTIVE_CASES, ids=[c[0] for c in ADAPTIVE_CASES])
def test_adaptive_avg_pool2d_matches_torch(torch, name, shape, size):
    _compare(torch, lambda x: F.adaptive_avg_pool2d(x, size),
             lambda x: torch.nn.functional.adaptive_avg_pool2d(x, size), _randn(*shape))


def test_adaptive_avg_pool1d_matches_torch(torch):
    _compare(torch, lambda x: F.adaptive_avg_pool1d(x, 4), lambda x: torch.nn.functional.adaptive_avg_pool1d(x, 4),
             _randn(2, 3, 9))


def test_pooling_float32_channel_major_input(torch, device):
    # A conv output is stored channel-major; pooling must read it through its strides.
    x = _randn(3, 2, 6, 8, dtype=np.float32)
    t = tensor.tensor(x, device=device).permute(1, 0, 2, 3)
    ref = torch.from_numpy(x).permute(1, 0, 2, 3)
    out, idx = F.max_pool2d(t, 2, return_indices=True)
    ref_out, ref_idx = torch.nn.functional.max_pool2d(ref, 2, return_indices=True)
    assert_close(out, ref_out.numpy())
    assert_close(idx, ref_idx.numpy())
    assert_close(F.avg_pool2d(t, 3, 1, 1), torch.nn.functional.avg_pool2d(ref, 3, 1, 1).numpy(), rtol=1e-5)


def test_max_pool2d_ties_and_nan(torch):
    x = np.array([[[[1.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], [np.nan, 2.0, 3.0, 3.0], [5.0, np.nan, 3.0, 3.0]]]])
    _compare(torch, lambda t: F.max_pool2d(t, 2, return_indices=True),
             lambda t: torch.nn.functional.max_pool2d(t, 2, return_indices=True), x)


def test_max_pool2d_integer_input(torch):
    x = np.arange(20).reshape(1, 1, 4, 5) % 7
    out = F.max_pool2d(tensor.tensor(x), 2, padding=1)
    assert_close(out, torch.nn.functional.max_pool2d(torch.from_numpy(x), 2, padding=1).numpy())


def test_pooling_empty_batch(device):
    x = tensor.zeros(0, 3, 4, 4, device=device, requires_grad=True)
    out = F.max_pool2d(x, 2) + F.avg_pool2d(x, 2) + F.adaptive_avg_pool2d(x, 2)
    assert out.shape == (0, 3, 2, 2)
    out.sum().backward()
    assert x.grad.shape == (0, 3, 4, 4)


@pytest.mark.parametrize("pool", [
    lambda x: F.max_pool2d(x, 2, stride=1, padding=1, dilation=(1, 2)),
    lambda x: F.max_pool2d(x, 2),  # non-overlapping windows: the unique-index fast path
    lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    lambda x: F.adaptive_avg_pool2d(x, (3, 2)),
], ids=["max_overlapping", "max_disjoint", "avg", "adaptive"])
def test_pooling_gradcheck_and_gradgradcheck(pool):
    x = tensor.tensor(_randn(1, 2, 5, 4), requires_grad=True)
    assert autograd.gradcheck(pool, (x,))
    assert autograd.gradgradcheck(pool, (x,))


POOL_ERRORS = [
    (lambda: F.max_pool2d(tensor.zeros(6, 6), 2), "non-empty 3D or 4D \\(batch mode\\) tensor expected for input"),
    (lambda: F.max_pool2d(tensor.zeros(2, 0, 4, 4), 2), r"tensor with optional 0 dim batch size for input, but "
     r"got:\[2, 0, 4, 4\]"),
    (lambda: F.max_pool2d(tensor.zeros(1, 1, 4, 4), 0), r"kernel size should be greater than zero"),
    (lambda: F.max_pool2d(tensor.zeros(1, 1, 4, 4), 2, stride=0), "stride should not be zero"),
    (lambda: F.max_pool2d(tensor.zeros(1, 1, 4, 4), 2, padding=2), "pad should be at most half of effective kernel "
     "size, but got pad=2, kernel_size=2 and dilation=1"),
    (lambda: F.max_pool2d(tensor.zeros(1, 1, 2, 2), 3), r"Given input size: \(1x2x2\)\. Calculated output size: "
     r"\(1x0x0\)\. Output size is too small"),
    (lambda: F.avg_pool2d(tensor.zeros(1, 1, 2, 2), 3), r"Output size is too small"),
    (lambda: F.avg_pool2d(tensor.zeros(1, 1, 4, 4), 2, divisor_override=0), "divisor must be not zero"),
    (lambda: F.avg_pool2d(tensor.zeros(1, 1, 4, 4, dtype=tensor.int64), 2), "\"avg_pool2d\" not implemented for "
     "'int64'"),
    (lambda: F.max_pool2d(tensor.zeros(1, 1, 4, 4), (2, 2, 2)), "expected kernel_size to be a single integer value "
     "or a list of 2 values"),
    (lambda: F.adaptive_avg_pool2d(tensor.zeros(6, 6), 2), r"adaptive_avg_pool2d\(\): Expected 3D or 4D tensor, but "
     r"got \[6, 6\]"),
    (lambda: F.adaptive_avg_pool2d(tensor.zeros(1, 2, 4, 4), (2, 2, 2)), "adaptive_avg_pool2d: output_size must be 2"),
    (lambda: F.adaptive_avg_pool2d(tensor.zeros(1, 2, 0, 4), 2), "Expected input to have non-zero size for "
     "non-batch dimensions"),
]


@pytest.mark.parametrize("call,message", POOL_ERRORS)
def test_pooling_errors(call, message):
    with pytest.raises(RuntimeError, match=message):
        call()


# ------------------------------------------------------------------ modules

MODULES = [
    ("MaxPool2d", (2,), {}, (2, 3, 8, 8)),
    ("MaxPool2d", (3, 1, 1), dict(ceil_mode=True, dilation=1), (2, 3, 7, 7)),
    ("MaxPool1d", (2,), {}, (2, 3, 9)),
    ("AvgPool2d", (3, 2, 1), dict(ceil_mode=True, count_include_pad=False, divisor_override=None), (2, 3, 7, 6)),
    ("AvgPool2d", (2,), dict(divisor_override=3), (1, 2, 6, 6)),
    ("AvgPool1d", (3, 2), dict(padding=1), (2, 3, 9)),
    ("AdaptiveAvgPool2d", ((None, 3),), {}, (2, 3, 7, 8)),
    ("AdaptiveAvgPool2d", (1,), {}, (2, 3, 7, 8)),
    ("AdaptiveAvgPool1d", (3,), {}, (2, 3, 8)),
]


@pytest.mark.parametrize("name,args,kwargs,shape", MODULES, ids=[m[0] for m in MODULES])
def test_pooling_modules_match_torch(torch, name, args, kwargs, shape):
    ours, theirs = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    _compare(torch, ours, theirs, _randn(*shape))


def test_max_pool_module_return_indices(torch):
    x = _randn(1, 2, 6, 6)
    out, idx = nn.MaxPool2d(3, 2, 1, return_indices=True)(tensor.tensor(x))
    ref, ref_idx = torch.nn.MaxPool2d(3, 2, 1, return_indices=True)(torch.from_numpy(x))
    assert_close(out, ref.numpy())
    assert_close(idx, ref_idx.numpy())
    assert repr(nn.MaxPool2d(3, 1, 1, ceil_mode=True)) == \
        "MaxPool2d(kernel_size=3, stride=1, padding=1, dilation=1, ceil_mode=True)"
    assert nn.MaxPool2d(2).stride == 2 and nn.AvgPool2d(3).stride == 3


@pytest.mark.parametrize("pool, x", [
    (F.adaptive_avg_pool1d, tensor.ones(1, 1, 4, dtype=tensor.int64)),
    (F.adaptive_avg_pool2d, tensor.ones(1, 1, 4, 4, dtype=tensor.int64)),
])
def test_adaptive_avg_pool_of_integers_is_not_implemented(pool, x):
    with pytest.raises(NotImplementedError, match="not implemented for 'int64'"):
        pool(x, 2)
