"""float32 <-> bfloat16 conversions at the backend seam (Note [bfloat16 conversions]): the numba
kernels and the ml_dtypes fallback give ml_dtypes' bits, in the input's memory order."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

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


@pytest.fixture(params=["numba", "ml_dtypes"])
def route(request, monkeypatch):
    """Run the test through the numba kernels, then through ml_dtypes' casts."""
    if request.param == "numba":
        pytest.importorskip("numba")
        monkeypatch.setattr(_backend, "_fast_module", [])
        monkeypatch.setattr(_backend, "_FAST_CONVERT", True)
    else:
        monkeypatch.setattr(_backend, "_fast_module", [None])
    return request.param


def _float32_bits():
    random = np.random.default_rng(0).integers(0, 1 << 32, size=1 << 18, dtype=np.uint64).astype(np.uint32)
    return np.concatenate([np.array(SPECIAL_BITS, np.uint32), random]).view(np.float32)


def test_conversions_are_bit_identical_to_ml_dtypes(route):
    x = _float32_bits()
    with np.errstate(invalid="ignore"):  # ml_dtypes flags its NaN casts
        expected = x.astype(BF16)
        down = _backend.convert(x, BF16)
        rounded = _backend.round_to(x, BF16)
    assert down.dtype == BF16
    np.testing.assert_array_equal(down.view(np.uint16), expected.view(np.uint16))
    every = np.tile(np.arange(1 << 16, dtype=np.uint16), 2).view(BF16)  # every bfloat16, twice
    up = _backend.convert(every, np.dtype(np.float32))
    assert up.dtype == np.float32
    np.testing.assert_array_equal(up.view(np.uint32), every.astype(np.float32).view(np.uint32))
    assert rounded.dtype == np.float32
    np.testing.assert_array_equal(rounded.view(np.uint32), expected.astype(np.float32).view(np.uint32))
    if route == "numba":
        assert _backend._fast_module[0] is not None  # the kernels really ran


def _bits(a):
    return np.ascontiguousarray(a).view(np.uint16 if a.itemsize == 2 else np.uint32)


def test_conversions_keep_the_memory_order(route):
    x = np.random.default_rng(1).standard_normal((8, 16, 24, 20), dtype=np.float32)
    layouts = {
        "C": x,
        "F": np.asfortranarray(x),
        "movedim": np.moveaxis(x, -1, 0),
        "gaps": x[:, ::2],
        "small": x[:1, :1],
    }
    for name, a in layouts.items():
        for array, dtype in ((a, BF16), (a.astype(BF16), np.dtype(np.float32))):
            ours, theirs = _backend.convert(array, dtype), array.astype(dtype)
            assert ours.strides == theirs.strides, name
            np.testing.assert_array_equal(_bits(ours), _bits(theirs), err_msg=name)
        rounded = _backend.round_to(a, BF16)
        assert rounded.strides == a.astype(np.float32).strides, name
        np.testing.assert_array_equal(rounded, a.astype(BF16).astype(np.float32), err_msg=name)
