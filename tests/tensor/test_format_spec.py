"""``format(tensor, spec)``: a 0-d tensor formats as its Python number, as in PyTorch."""

from __future__ import annotations

import pytest

import tensor


def test_zero_dim_tensor_formats_as_its_number():
    assert f"{tensor.tensor(3.14159):.3f}" == "3.142"
    assert f"{tensor.tensor(7):>4d}" == "   7"
    assert f"{tensor.tensor(True)}" == "True"


def test_other_tensors_format_as_their_repr_and_refuse_a_spec():
    x = tensor.ones(2)
    assert f"{x}" == repr(x)
    with pytest.raises(TypeError, match="unsupported format string passed to Tensor.__format__"):
        f"{x:.3f}"
