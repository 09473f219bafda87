"""bfloat16 helpers against ml_dtypes' and torch's bits: the seam's ``round_to`` (the CPU autocast
convolution's rounding, Note [Autocast convolution]) and ``in_float32`` with Python int operands,
and ``relu``'s float32 forward and bit-picking backward."""

from __future__ import annotations

import ml_dtypes
import numpy as np

import autograd
import tensor
from tensor import _backend

BF16 = np.dtype(ml_dtypes.bfloat16)
# Infinities, NaNs (quiet, signalling, with payloads, negative), zeros, the smallest and largest
# subnormals and normals, and ties that round to even in both directions.
SPECIAL_BITS = [
    0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FBFFFFF, 0x7FFFFFFF,
    0xFFFFFFFF, 0x7FFF0000, 0x7F810000, 0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF,
    0x00008000, 0x00018000, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F7F8000, 0x7F7F7FFF, 0x3F808000,
    0x3F818000, 0x3F807FFF, 0x3F808001, 0xBF808000, 0xBF818000,
]  # fmt: skip


def _bits(a):
    return np.ascontiguousarray(a).view(np.uint16 if a.itemsize == 2 else np.uint32)


def test_round_to_gives_the_bfloat16_bits_as_float32_in_the_same_layout():
    random = np.random.default_rng(0).integers(0, 1 << 32, size=1 << 16, dtype=np.uint64).astype(np.uint32)
    x = np.concatenate([np.array(SPECIAL_BITS, np.uint32), random]).view(np.float32)
    with np.errstate(invalid="ignore"):  # ml_dtypes flags its NaN casts
        rounded, expected = _backend.round_to(x, BF16), x.astype(BF16)
    assert rounded.dtype == np.float32
    np.testing.assert_array_equal(_bits(rounded) >> 16, _bits(expected))
    assert not (_bits(rounded) & 0xFFFF).any()
    permuted = np.moveaxis(np.ones((4, 5, 6), np.float32), -1, 0)
    assert _backend.round_to(permuted, BF16).strides == permuted.strides


def test_python_int_operands_run_in_float32_with_ml_dtypes_bits():
    # in_float32 gives a Python int the array's dtype first (numpy's weak scalars), then widens.
    rng = np.random.default_rng(3)
    a = np.concatenate([rng.standard_normal(300) * 300, [np.inf, -np.inf, np.nan, 0.0, -0.0, 256.0]]).astype(BF16)
    for ufunc in (np.add, np.multiply, np.true_divide, np.greater, np.less_equal, np.equal):
        for b in (0, 3, -7, 257, 1 << 24, 1 << 30):
            with np.errstate(all="ignore"):
                ours, expected = _backend.in_float32(ufunc, a, b), ufunc(a, b)
            assert ours.dtype == expected.dtype, (ufunc.__name__, b)
            np.testing.assert_array_equal(_bits(ours) if ours.itemsize == 2 else ours,
                                          _bits(expected) if expected.itemsize == 2 else expected,
                                          err_msg=f"{ufunc.__name__} {b}")  # fmt: skip


def test_relu_in_bfloat16_gives_torch_bits_forward_and_backward(torch):
    # relu runs through float32 and its gradient is picked on the bits (+0.0 where the output is
    # not positive, as torch's threshold_backward), NaN, inf and signed zeros included.
    rng = np.random.default_rng(4)
    x = np.concatenate([rng.standard_normal(200), [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40]]).astype(np.float32)
    g = np.concatenate([rng.standard_normal(200), [1.0, np.nan, np.inf, -2.0, -3.0, -1.0]]).astype(np.float32)
    ours = tensor.from_numpy(x).to(tensor.bfloat16).requires_grad_()
    our_g = tensor.from_numpy(g).to(tensor.bfloat16).requires_grad_()
    out = ours.relu()
    (grad,) = autograd.grad(out, ours, our_g, create_graph=True)
    theirs = torch.from_numpy(x).to(torch.bfloat16).requires_grad_()
    tout = theirs.relu()
    (tgrad,) = torch.autograd.grad(tout, theirs, torch.from_numpy(g).to(torch.bfloat16))
    assert out.dtype is grad.dtype is tensor.bfloat16
    # forward: ml_dtypes' own maximum bit for bit (relu(-0.0) is +0.0 there), torch's values
    np.testing.assert_array_equal(out.detach().numpy().view(np.uint16), np.maximum(x.astype(BF16), 0).view(np.uint16))
    np.testing.assert_array_equal(out.detach().float().numpy(), tout.detach().float().numpy())
    # backward: torch's values (a NaN output passes its gradient), and its zeros are +0.0 bits
    ours_grad = grad.detach().numpy()
    np.testing.assert_array_equal(ours_grad.astype(np.float32), tgrad.float().numpy())
    assert not ours_grad.view(np.uint16)[tgrad.float().numpy() == 0].any()
    # double backward: the gradient is linear in g, through the same mask
    (mask,) = autograd.grad(grad.float().sum(), our_g)
    with np.errstate(invalid="ignore"):  # NaN <= 0
        passes = ~(x.astype(BF16) <= 0)
    np.testing.assert_array_equal(mask.float().numpy(), passes.astype(np.float32))
