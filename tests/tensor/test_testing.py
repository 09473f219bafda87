"""tensor.testing.assert_close against torch.testing.assert_close: what passes, and the words of
what fails (shapes print as tuples here, torch.Size there)."""

from __future__ import annotations

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
