"""``repr``/``str`` of tensors (tensor/_format.py), compared with torch's ``_tensor_str``: number
formats, complex parts, column widths, summarisation, line wrapping and the suffixes."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tensor


@pytest.fixture(autouse=True)
def default_printoptions(torch):
    """Both libraries start and end each test with the default print options."""
    torch.set_printoptions(profile="default")
    tensor.set_printoptions(profile="default")
    yield
    torch.set_printoptions(profile="default")
    tensor.set_printoptions(profile="default")


def _same_as_torch(torch, values, dtype: str, **kwargs) -> None:
    ours = tensor.tensor(values, dtype=getattr(tensor, dtype), **kwargs)
    theirs = torch.tensor(values, dtype=getattr(torch, dtype), **kwargs)
    expected = repr(theirs).replace("torch.", "tensor.")
    assert repr(ours) == expected
    assert str(ours) == expected


@pytest.mark.parametrize(("values", "dtype"), [
    ([1000000.0], "float32"),
    ([0.0, 100000.0, 1000000.0], "float32"),
    ([100000000.0], "float64"),
    ([100000001.0, 2.0], "float64"),
    ([1000.0], "float16"),
    ([1.5, 1000.5], "float16"),
    ([1.0, 1000.0], "float32"),
    ([1.0, 1001.0], "float32"),
    ([1e-4, 1.0], "float32"),
    ([1e30, -1e-30], "float32"),
    ([[1e30, -1.0], [3.0, -4e10]], "float64"),
])
def test_scientific_notation_and_whole_numbers_follow_torch(torch, values, dtype):
    _same_as_torch(torch, values, dtype)


@pytest.mark.parametrize("values", [
    [1 + 2j, 3 - 0.5j],
    [1e-5 + 1j, 2],
    1e8 + 1j,
    [100 + 0.001j],
    [complex("nan+infj"), -0.0 - 0.0j],
    [[1 + 1j, -2.5j], [3, 4e9 - 1j]],
])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_parts_are_formatted_separately(torch, values, dtype):
    _same_as_torch(torch, values, dtype)


@pytest.mark.parametrize(("values", "dtype"), [
    ([True, True], "bool"),
    ([[True, False], [True, True]], "bool"),
    ([float("nan"), 1.0, 2.0], "float32"),
    ([0.0, -0.0], "float32"),
    ([1.0, float("inf")], "float32"),
    ([float("-inf"), 0.5], "float64"),
    ([-7, 120], "int8"),
])
def test_columns_are_as_wide_as_the_finite_nonzero_values(torch, values, dtype):
    _same_as_torch(torch, values, dtype)


def test_a_suffix_past_the_linewidth_starts_its_own_line(torch):
    values = [1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5]
    _same_as_torch(torch, values, "float64", requires_grad=True)
    _same_as_torch(torch, values * 2, "float16", requires_grad=True)
    _same_as_torch(torch, [values + [9.5]], "float32")  # 9 columns fit a line of 80
    theirs = torch.tensor(values, dtype=torch.float64, requires_grad=True) * 2
    assert repr(tensor.tensor(values, dtype=tensor.float64, requires_grad=True) * 2) == repr(theirs).replace(
        "torch.", "tensor.")


def test_line_breaks_count_our_own_module_name():
    # "tensor.float16" is one character longer than "torch.float16": torch's line is 80 wide
    shown = repr(tensor.tensor([108.0, -28.875, 8.34375, -84.9375, -51.0625], dtype=tensor.float16))
    assert shown == ("tensor([108.0000, -28.8750,   8.3438, -84.9375, -51.0625],\n"
                     "       dtype=tensor.float16)")


@pytest.mark.parametrize("options", [
    {"profile": "short"}, {"profile": "full"}, {"precision": 0}, {"precision": 8}, {"sci_mode": True},
    {"sci_mode": False}, {"threshold": 5, "edgeitems": 1}, {"edgeitems": 0, "threshold": 3},
    {"linewidth": 30}, {"threshold": 0},
], ids=str)
def test_print_options_over_a_random_grid_match_torch(torch, options):
    rng = np.random.default_rng(len(str(options)))
    shapes = [(), (0,), (2, 0), (5,), (3, 4), (2, 3, 4), (12, 9)]
    scales = [1.0, 1e-6, 1e9, 1e120]
    tensor.set_printoptions(**options)
    torch.set_printoptions(**options)
    for dtype in ["float32", "float64", "float16", "bfloat16", "int32", "uint8", "bool", "complex64"]:
        for shape in shapes:
            values = rng.standard_normal(shape) * rng.choice(scales if dtype == "float64" else scales[:3])
            if values.size and rng.random() < 0.5:
                values = np.round(values)
            if values.size > 1:
                values.reshape(-1)[0] = rng.choice([float("nan"), float("inf"), -0.0])
            if dtype in ("float16", "bfloat16"):
                values = np.clip(values, -6e4, 6e4)
            if dtype in ("int32", "uint8", "bool"):
                values = np.nan_to_num(np.abs(values), posinf=1.0) % 100
            if dtype == "complex64":
                values = values + 1j * rng.standard_normal(shape)
            ours = tensor.tensor(values.tolist(), dtype=getattr(tensor, dtype))
            theirs = torch.tensor(values.tolist(), dtype=getattr(torch, dtype))
            expected = repr(theirs).replace("torch.", "tensor.")
            assert _unwrapped_suffixes(repr(ours)) == _unwrapped_suffixes(expected)


def _unwrapped_suffixes(text: str) -> str:
    """``text`` with each suffix moved back onto the previous line: where it breaks depends on
    the module name's length."""
    return re.sub(r",\n {7}(?=[a-z_]+=)", ", ", text)


def test_summarised_large_tensor_matches_torch(torch):
    values = np.random.default_rng(0).standard_normal((1000, 1000)).astype(np.float32)
    assert repr(tensor.tensor(values)) == repr(torch.tensor(values))
    assert repr(tensor.tensor(values[:, :40] * 1e6)) == repr(torch.tensor(values[:, :40] * 1e6))
