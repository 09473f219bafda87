"""The backend seam's bfloat16 helpers against ml_dtypes' bits: ``round_to`` (the CPU autocast
convolution's rounding, Note [Autocast convolution]) and ``in_float32`` with Python int operands."""

from __future__ import annotations

import ml_dtypes
import numpy as np

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
