"""F.pad (every mode) and the nn.*Pad*d layers against torch: values and gradients."""

from __future__ import annotations

import numpy as np
import pytest

import nn
import nn.functional as F
import tensor
from tests.nn.fn_oracle import check_fn

RNG = np.random.default_rng(0)

CASES = [
    ((2, 3, 5), (1, 2), "constant"),
    ((2, 3, 5), (-1, 2, 1, 0), "constant"),
    ((2, 3, 4, 5), (1, 0, 2, 1, 0, 1), "constant"),
    ((3, 5), (2, 3), "reflect"),
    ((2, 3, 5), (4, 1), "reflect"),
    ((2, 3, 4, 5), (1, 2, 3, 0), "reflect"),
    ((1, 2, 3, 4, 5), (1, 1, 2, 0, 1, 2), "reflect"),
    ((2, 3, 5), (3, 2), "replicate"),
    ((2, 3, 4, 5), (1, 2, 2, 3), "replicate"),
    ((1, 2, 3, 4, 5), (2, 1, 0, 2, 1, 1), "replicate"),
    ((2, 3, 5), (2, 5), "circular"),
    ((2, 3, 4, 5), (1, 2, 4, 3), "circular"),
    ((1, 2, 3, 4, 5), (1, 1, 2, 0, 3, 1), "circular"),
    ((1, 1, 6), (3, -1), "circular"),  # a crop on one side: the wrap reads the cropped dim
    ((1, 1, 6), (-1, 2), "circular"),
    ((1, 2, 4, 5), (-2, 1, 2, -1), "circular"),
]


@pytest.mark.parametrize("shape, pad, mode", CASES)
def test_pad_matches_torch(shape, pad, mode, torch):
    x = RNG.standard_normal(shape)
    value = 0.25 if mode == "constant" else None
    check_fn(lambda t: F.pad(t, pad, mode, value), lambda t: torch.nn.functional.pad(t, pad, mode, value), torch, x)


@pytest.mark.parametrize(
    "name, args, shape",
    [
        ("ConstantPad1d", ((1, 2), 1.5), (2, 3, 4)),
        ("ConstantPad2d", (1, 0.5), (3, 4, 5)),
        ("ConstantPad3d", ((1, 0, 0, 1, 2, 1), -1.0), (1, 2, 3, 4, 3)),
        ("ZeroPad1d", (2,), (3, 4)),
        ("ZeroPad2d", ((1, 2, 0, 1),), (1, 2, 3, 3)),
        ("ZeroPad3d", (1,), (1, 2, 2, 2)),
        ("ReflectionPad1d", (2,), (2, 3, 4)),
        ("ReflectionPad2d", ((1, 2, 0, 1),), (1, 2, 3, 4)),
        ("ReflectionPad3d", (1,), (1, 1, 2, 3, 4)),
        ("ReplicationPad1d", ((3, 1),), (2, 3, 4)),
        ("ReplicationPad2d", (2,), (2, 3, 4)),
        ("ReplicationPad3d", ((1, 0, 2, 1, 0, 1),), (1, 2, 2, 3, 2)),
        ("CircularPad1d", (2,), (2, 3, 4)),
        ("CircularPad2d", ((1, 2, 0, 1),), (1, 2, 3, 4)),
        ("CircularPad3d", (1,), (1, 1, 2, 3, 4)),
    ],
)
def test_pad_layers_match_torch(name, args, shape, torch):
    ours, theirs = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    check_fn(ours, theirs, torch, RNG.standard_normal(shape))
    assert repr(ours) == repr(theirs)


def test_bad_padding_raises():
    x = tensor.zeros(1, 2, 3)
    with pytest.raises(RuntimeError, match="divisible by 2"):
        F.pad(x, (1, 2, 3))
    with pytest.raises(RuntimeError, match="Padding size should be less than the corresponding input dimension"):
        F.pad(x, (3, 0), mode="reflect")
    with pytest.raises(RuntimeError, match="wrapping around more than once"):
        F.pad(x, (4, 0), mode="circular")
    with pytest.raises(NotImplementedError, match="non-constant padding"):
        F.pad(tensor.zeros(3), (1, 1), mode="reflect")
    with pytest.raises(NotImplementedError, match="Unrecognised padding mode 'wrap'"):
        F.pad(x, (1, 1), mode="wrap")
    with pytest.raises(ValueError, match="expects padding of 4 ints"):
        nn.ZeroPad2d((1, 2))


@pytest.mark.parametrize("shape, pad, mode, value, message", [
    ((2,), (1, 1, 1, 1), "constant", None, "Padding length should be less than or equal to two times"),
    ((1, 2, 3), (1, 1), "reflect", 1.0, "doesn't take in value argument"),
    ((1, 2, 0), (1, 1), "replicate", None, "possibly 0 batch size and other non-zero dimensions"),
    ((1, 0, 3), (1, 1), "reflect", None, "possibly 0 batch size and other non-zero dimensions"),
    ((1, 1, 3), (-2, -2), "circular", None, "Negative padding value is resulting in an empty dimension"),
])
def test_bad_padding_raises_runtime_error_as_torch(shape, pad, mode, value, message, torch):
    with pytest.raises(RuntimeError, match=message):
        torch.nn.functional.pad(torch.ones(shape), pad, mode, value)
    with pytest.raises(RuntimeError, match=message):
        F.pad(tensor.ones(*shape), pad, mode, value)
