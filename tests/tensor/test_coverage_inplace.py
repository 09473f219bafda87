"""The in-place forms of the issue-16 ops: each returns ``self``, holds the out-of-place result,
bumps the version counter and keeps gradients flowing (through a non-leaf)."""

from __future__ import annotations

import numpy as np
import pytest

import tensor
from autograd import gradcheck

RNG = np.random.default_rng(7)


def _x():
    return tensor.tensor(RNG.uniform(0.2, 0.8, (2, 3)))


INDEX = tensor.tensor([0, 2])
CASES = {
    "lerp": (lambda: (_x(), 0.3), {}),
    "addcmul": (lambda: (_x(), _x()), {"value": 0.5}),
    "addcdiv": (lambda: (_x(), _x()), {"value": 2}),
    "addmm": (lambda: (_x()[:, :2].contiguous(), _x()), {"beta": 0.5}),
    "tril": (lambda: (), {}),
    "triu": (lambda: (1,), {}),
    "nan_to_num": (lambda: (), {}),
    "cumsum": (lambda: (1,), {}),
    "cumprod": (lambda: (0,), {}),
    "index_fill": (lambda: (1, INDEX, -1.0), {}),
    "index_copy": (lambda: (1, INDEX, _x()[:, :2].contiguous()), {}),
    "masked_scatter": (lambda: (_x() > 0.5, _x()), {}),
    "scatter_reduce": (lambda: (1, tensor.tensor([[0, 0], [2, 1]]), _x()[:, :2].contiguous(), "amax"), {}),
    "put": (lambda: (INDEX, _x()[0, :2].contiguous()), {}),
    "renorm": (lambda: (2, 0, 0.5), {}),
    "atan2": (lambda: (_x(),), {}),
    "hypot": (lambda: (_x(),), {}),
    "xlogy": (lambda: (_x(),), {}),
    "lgamma": (lambda: (), {}),
    "digamma": (lambda: (), {}),
    "erfinv": (lambda: (), {}),
    "fmod": (lambda: (0.3,), {}),
    "asin": (lambda: (), {}),
    "atanh": (lambda: (), {}),
    "tan": (lambda: (), {}),
    "log2": (lambda: (), {}),
    "square": (lambda: (), {}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_inplace_form_matches_out_of_place(name):
    make_args, kwargs = CASES[name]
    x, args = _x(), make_args()
    expected = getattr(tensor, name)(x, *args, **kwargs)
    version = x._version
    out = getattr(x, name + "_")(*args, **kwargs)
    assert out is x and x._version > version
    np.testing.assert_allclose(x.numpy(), expected.numpy())


@pytest.mark.parametrize("name", ["lerp", "addcmul", "cumsum", "index_fill", "asin", "lgamma", "scatter_reduce"])
def test_inplace_form_is_differentiable(name):
    make_args, kwargs = CASES[name]
    args = make_args()

    def fn(leaf):
        y = leaf * 1.0  # in-place on a non-leaf, as in a model
        return getattr(y, name + "_")(*args, **kwargs)

    assert gradcheck(fn, (_x().requires_grad_(),))
