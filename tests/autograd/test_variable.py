"""autograd.Variable, PyTorch's deprecated wrapper: a new leaf sharing the data's storage."""

from __future__ import annotations

import pytest

import tensor
from autograd import Variable


def _behaviour(lib, variable):
    t = lib.ones(2)
    v = variable(t, requires_grad=True)
    (v * 3).sum().backward()
    return (v is t, v.requires_grad, t.requires_grad, v.is_leaf, isinstance(t, variable),
            v.data_ptr() == t.data_ptr(), v.grad.tolist(), tuple(variable().shape), variable(t).requires_grad)


def test_variable_is_a_new_leaf_sharing_storage(device):
    t = tensor.ones(2, device=device)
    v = Variable(t, requires_grad=True)
    assert v is not t and v.is_leaf and v.requires_grad and not t.requires_grad
    assert v.data_ptr() == t.data_ptr() and isinstance(t, Variable) and not isinstance([1], Variable)
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
        Variable([1, 2])


def test_variable_as_torch(torch):
    assert _behaviour(tensor, Variable) == _behaviour(torch, torch.autograd.Variable)
