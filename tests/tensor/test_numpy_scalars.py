"""numpy integers as sizes and dims, numpy scalars and arrays as operands, and numpy's view of a
Tensor (``np.asarray``, ufuncs), each compared with torch."""

from __future__ import annotations

import numpy as np
import pytest

import tensor

i0, i1, i2, i3 = np.int64(0), np.int64(1), np.int64(2), np.int32(3)

# Each takes the library (tensor or torch) and returns what is compared.
SIZE_AND_DIM_CALLS = {
    "zeros": lambda L: L.zeros(i3).shape,
    "zeros_tuple": lambda L: L.zeros((i2, i3)).shape,
    "ones_varargs": lambda L: L.ones(i2, i3).shape,
    "empty_list": lambda L: L.empty([i2]).shape,
    "full": lambda L: L.full((i2,), 1.0).shape,
    "rand": lambda L: L.rand(i2, 2).shape,
    "new_zeros": lambda L: L.ones(5).new_zeros(i2).shape,
    "new_full": lambda L: L.ones(5).new_full((i2,), 1).shape,
    "view": lambda L: L.ones(6).view(i2, -1).shape,
    "view_tuple": lambda L: L.ones(6).view((i2, i3)).shape,
    "reshape": lambda L: L.ones(6).reshape(i2, i3).shape,
    "expand": lambda L: L.ones(1, 3).expand(i2, -1).shape,
    "repeat": lambda L: L.ones(3).repeat(i2).shape,
    "resize_": lambda L: L.ones(3).resize_(i2).shape,
    "sum": lambda L: L.ones(2, 3).sum(i1).shape,
    "sum_dims": lambda L: L.ones(1, 2, 3).sum((i1, i2)).shape,
    "mean": lambda L: L.ones(2, 3).mean(dim=i0).shape,
    "amax": lambda L: L.ones(2, 3).amax(i1).shape,
    "transpose": lambda L: L.ones(2, 3).transpose(i0, i1).shape,
    "permute": lambda L: L.ones(2, 3).permute(i1, i0).shape,
    "unsqueeze": lambda L: L.ones(3).unsqueeze(i0).shape,
    "squeeze": lambda L: L.ones(1, 3).squeeze(i0).shape,
    "flatten": lambda L: L.ones(2, 3).flatten(i0).shape,
    "movedim": lambda L: L.ones(2, 3).movedim(i0, i1).shape,
    "roll": lambda L: L.arange(6).reshape(2, 3).roll(i1, i1).tolist(),
    "size": lambda L: L.ones(2, 3).size(i1),
    "chunk": lambda L: L.ones(4).chunk(i2)[0].shape,
    "cat": lambda L: L.cat([L.ones(2), L.ones(2)], i0).shape,
    "stack": lambda L: L.stack([L.ones(2), L.ones(2)], i1).shape,
    "argmax": lambda L: L.ones(2, 3).argmax(i1).shape,
    "cumsum": lambda L: L.ones(2, 3).cumsum(i1).shape,
    "zero_dim_tensor": lambda L: L.zeros(L.tensor(2)).shape,
    "nn.Linear": lambda L: L.nn.Linear(i3, i2).weight.shape,
    "nn.Embedding": lambda L: L.nn.Embedding(i3, i2).weight.shape,
}


@pytest.mark.parametrize("name", SIZE_AND_DIM_CALLS)
def test_numpy_integers_are_sizes_and_dims_as_in_torch(torch, name):
    call = SIZE_AND_DIM_CALLS[name]
    assert np.asarray(call(tensor)).tolist() == np.asarray(call(torch)).tolist()


@pytest.mark.parametrize("bad", [True, np.True_, 2.0, np.float64(2)])
def test_bools_and_floats_are_refused_as_sizes_and_dims(torch, bad):
    for L in (tensor, torch):
        with pytest.raises(TypeError):
            L.zeros(bad)
        with pytest.raises(TypeError):
            L.ones(2, 3).sum(bad)
        with pytest.raises(TypeError):
            L.ones(2, 3).transpose(bad, 0)


@pytest.mark.parametrize("expr", [
    "L.ones(3) * np.float64(2)", "L.ones(3, dtype=L.float16) + np.float64(1)",
    "L.ones(3, dtype=L.int32) * np.float64(2.5)", "L.ones(3).pow(np.float64(2))",
    "L.ones(3).add(1, alpha=np.float64(2))", "L.lerp(L.ones(3), L.zeros(3), np.float64(0.5))",
    "np.float64(2) * L.ones(3)", "np.float32(2) + L.ones(3, dtype=L.float16)", "np.int64(2) * L.ones(3, dtype=L.int32)",
    "np.float64(2) - L.ones(3)", "np.float64(2) / L.ones(3)", "np.float64(2) ** L.ones(3)", "np.float64(2) < L.ones(3)",
    "L.ones(2) + np.ones(2)", "L.ones(2) * np.ones(2, dtype=np.float32)", "np.ones(2) == L.ones(2)",
    "np.exp(L.ones(2))", "np.maximum(L.ones(2), np.ones(2))", "np.exp(L.tensor(1.0))",
])
def test_numpy_operands_give_torchs_type_and_dtype(torch, expr):
    ours, theirs = (eval(expr, {"L": L, "np": np}) for L in (tensor, torch))  # noqa: S307 - test expressions
    assert type(ours) is tensor.Tensor
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    np.testing.assert_allclose(ours.numpy(), theirs.numpy())


def test_numpy_operand_result_keeps_the_graph():
    x = tensor.ones(3, requires_grad=True)
    (np.float64(3) * x).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0, 3.0]


def test_tensor_priority_is_torchs(torch):
    assert tensor.Tensor.__array_priority__ == torch.Tensor.__array_priority__


@pytest.mark.parametrize("convert", [np.asarray, np.array, np.exp])
def test_numpy_refuses_a_tensor_that_requires_grad(torch, convert):
    for L in (tensor, torch):
        with pytest.raises(RuntimeError, match="requires grad"):
            convert(L.ones(2, requires_grad=True))


@pytest.mark.parametrize("make", ["as_tensor", "asarray"])
def test_as_tensor_with_the_arrays_own_dtype_shares_memory(torch, make):
    for L in (tensor, torch):
        a = np.zeros(3, dtype=np.float32)
        t = getattr(L, make)(a, dtype=L.float32)
        a[0] = 7
        assert t[0].item() == 7.0
