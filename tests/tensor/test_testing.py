"""tensor.testing.assert_close against torch.testing.assert_close: what passes, and the words of
what fails (shapes print as tuples here, torch.Size there)."""

from __future__ import annotations

import numpy as np
import pytest

import tensor

CASES = {
    "values": lambda T: T.testing.assert_close(T.tensor([1.0, 2.0, 3.0]), T.tensor([1.0, 2.5, 3.0])),
    "dtype": lambda T: T.testing.assert_close(T.tensor([1.0, 2.0]), T.tensor([1.0, 2.0], dtype=T.float64)),
    "integers": lambda T: T.testing.assert_close(T.tensor([1, 2]), T.tensor([1, 3])),
    "uint8": lambda T: T.testing.assert_close(T.tensor([1, 2], dtype=T.uint8), T.tensor([3, 2], dtype=T.uint8)),
    "float within tolerance": lambda T: T.testing.assert_close(1.0, 1.0 + 1e-9),
    "floats": lambda T: T.testing.assert_close(1.0, 1.1),
    "sequence item": lambda T: T.testing.assert_close([T.ones(2), 1], [T.ones(2), 2]),
    "mapping keys": lambda T: T.testing.assert_close({"a": T.ones(2)}, {"b": T.ones(2)}),
    "nan": lambda T: T.testing.assert_close(T.tensor([float("nan")]), T.tensor([float("nan")])),
    "equal_nan": lambda T: T.testing.assert_close(T.tensor([float("nan")]), T.tensor([float("nan")]), equal_nan=True),
    "one tolerance": lambda T: T.testing.assert_close(T.ones(2), T.ones(2), rtol=1e-3),
    "2-d index": lambda T: T.testing.assert_close(T.ones(2, 2), T.ones(2, 2) + T.tensor([[0, 0], [0, 1.0]])),
    "check_dtype off": lambda T: T.testing.assert_close(T.ones(2), T.ones(2, dtype=T.float64), check_dtype=False),
    "0-d": lambda T: T.testing.assert_close(T.tensor(1.0), T.tensor(2.0)),
    "bool": lambda T: T.testing.assert_close(T.tensor([True]), T.tensor([False])),
    "msg": lambda T: T.testing.assert_close(T.ones(2), T.zeros(2), msg="custom"),
    "msg callable": lambda T: T.testing.assert_close(T.ones(2), T.zeros(2), msg=lambda m: "X" + m[:10]),
    "tolerances given": lambda T: T.testing.assert_close(T.ones(2), T.ones(2) * 1.01, rtol=0.1, atol=0.0),
}


def _outcome(lib, case):
    try:
        case(lib)
    except (AssertionError, ValueError, TypeError) as exc:
        return type(exc).__name__, str(exc)
    return "passed"


def test_outcomes():
    assert _outcome(tensor, CASES["equal_nan"]) == "passed"
    kind, text = _outcome(tensor, CASES["values"])
    assert kind == "AssertionError" and "Mismatched elements: 1 / 3 (33.3%)" in text
    assert "Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)" in text
    assert _outcome(tensor, CASES["msg"]) == ("AssertionError", "custom")
    assert _outcome(tensor, CASES["one tolerance"])[0] == "ValueError"
    with pytest.raises(TypeError, match="No comparison pair"):
        tensor.testing.assert_close(tensor.ones(2), 1.0)


@pytest.mark.parametrize("name", list(CASES))
def test_as_torch(torch, name):
    theirs = _outcome(torch, CASES[name])
    if theirs != "passed":  # dtypes print as tensor.float32 here
        theirs = (theirs[0], theirs[1].replace("torch.", "tensor."))
    assert _outcome(tensor, CASES[name]) == theirs


def test_shape_mismatch():
    with pytest.raises(AssertionError, match=r"The values for attribute 'shape' do not match: \(2,\) != \(3,\)."):
        tensor.testing.assert_close(tensor.ones(2), tensor.ones(3))


PAIRS = {
    "none": lambda: (None, None),
    "none against a number": lambda: (None, 1),
    "ndarrays": lambda: (np.array([1.0, 2.0]), np.array([1.0, 2.0])),
    "ndarrays differ": lambda: (np.array([1.0, 2.0]), np.array([1.0, 2.5])),
    "ndarray dtypes": lambda: (np.array([1]), np.array([1.0])),
    "int against float": lambda: (1, 1.0),
    "float against complex": lambda: (1.0, 1 + 0j),
    "numpy scalar": lambda: (np.float64(1.0), 1.0),
}


@pytest.mark.parametrize("name", list(PAIRS))
def test_none_ndarrays_and_number_types_as_torch(torch, name):
    actual, expected = PAIRS[name]()
    theirs = _outcome(torch, lambda T: T.testing.assert_close(actual, expected))
    ours = _outcome(tensor, lambda T: T.testing.assert_close(actual, expected))
    assert (ours if ours == "passed" else ours[0]) == (theirs if theirs == "passed" else theirs[0])
    if theirs != "passed" and "(d)types" in theirs[1]:
        assert ours[1] == theirs[1]


@pytest.mark.parametrize("rtol,atol", [(-1.0, 0.0), (0.0, -1.0), (float("nan"), 0.0)])
def test_negative_or_nan_tolerance_is_refused(torch, rtol, atol):
    with pytest.raises(RuntimeError):
        torch.testing.assert_close(torch.ones(1), torch.ones(1), rtol=rtol, atol=atol)
    with pytest.raises(RuntimeError, match="greater than or equal to zero"):
        tensor.testing.assert_close(tensor.ones(1), tensor.ones(1), rtol=rtol, atol=atol)


def test_assert_allclose_is_deprecated_and_loose_on_dtypes():
    with pytest.warns(FutureWarning):
        tensor.testing.assert_allclose(tensor.ones(2), [1.0, 1.00001])
    with pytest.warns(FutureWarning), pytest.raises(AssertionError):
        tensor.testing.assert_allclose(tensor.ones(2), [1.0, 1.1])


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int64", "float16", "bfloat16", "float32", "complex64",
                                   "float8_e4m3fn"])
def test_make_tensor_draws_in_torchs_default_ranges(dtype):
    d = getattr(tensor, dtype)
    t = tensor.testing.make_tensor(4, 50, dtype=d, device="cpu")
    assert t.shape == (4, 50) and t.dtype is d
    parts = [t.real, t.imag] if d.is_complex else [t]
    low, high = {"bool": (0, 1), "uint8": (0, 9), "int64": (-9, 9)}.get(dtype, (-9, 9))
    for part in parts:
        values = part.float() if dtype in ("bool", "float8_e4m3fn") else part
        assert low <= float(values.min()) and float(values.max()) <= high


def test_make_tensor_options_and_errors(torch):
    t = tensor.testing.make_tensor((3, 4), dtype=tensor.float32, device="cpu", low=0, high=1, noncontiguous=True,
                                   requires_grad=True)
    theirs = torch.testing.make_tensor((3, 4), dtype=torch.float32, device="cpu", noncontiguous=True)
    assert t.shape == (3, 4) and not t.is_contiguous() and t.stride() == theirs.stride() and t.requires_grad
    nonzero = tensor.testing.make_tensor(500, dtype=tensor.int64, device="cpu", low=-1, high=2, exclude_zero=True)
    assert 0 not in nonzero.tolist()
    for kwargs in ({"low": 3, "high": 1}, {"low": float("nan")}, {"low": 300, "high": 400}, {"requires_grad": True}):
        with pytest.raises(ValueError):
            torch.testing.make_tensor(2, dtype=torch.uint8, device="cpu", **kwargs)
        with pytest.raises(ValueError):
            tensor.testing.make_tensor(2, dtype=tensor.uint8, device="cpu", **kwargs)
