"""NumPy's argument names (``axis``, ``keepdims``) where PyTorch's parser takes them
(tensor/_numpy_names.py, Note [NumPy argument names]), compared with torch where installed and
with the ``dim``/``keepdim`` spelling everywhere."""

from __future__ import annotations

import numpy as np
import pytest

import nn.functional as F
import tensor
from tests.helpers import assert_close

A = np.random.default_rng(7).standard_normal((3, 4, 5))

# (name, fn(module, t) with NumPy's names, the same with PyTorch's)
CASES = [
    ("sum", lambda m, t: t.sum(axis=1, keepdims=True), lambda m, t: t.sum(dim=1, keepdim=True)),
    ("module_sum", lambda m, t: m.sum(t, axis=(0, 2)), lambda m, t: m.sum(t, dim=(0, 2))),
    ("mean", lambda m, t: t.mean(axis=-1), lambda m, t: t.mean(dim=-1)),
    ("amax", lambda m, t: t.amax(axis=0, keepdims=True), lambda m, t: t.amax(dim=0, keepdim=True)),
    ("max", lambda m, t: t.max(axis=2).values, lambda m, t: t.max(dim=2).values),
    ("argmax", lambda m, t: t.argmax(axis=1), lambda m, t: t.argmax(dim=1)),
    ("std", lambda m, t: t.std(axis=1), lambda m, t: t.std(dim=1)),
    ("var", lambda m, t: t.var(axis=2, keepdims=True), lambda m, t: t.var(dim=2, keepdim=True)),
    ("cumsum", lambda m, t: t.cumsum(axis=1), lambda m, t: t.cumsum(dim=1)),
    ("logsumexp", lambda m, t: t.logsumexp(axis=0), lambda m, t: t.logsumexp(dim=0)),
    ("softmax_method", lambda m, t: t.softmax(axis=1), lambda m, t: t.softmax(dim=1)),
    ("cat", lambda m, t: m.cat([t, t], axis=2), lambda m, t: m.cat([t, t], dim=2)),
    ("stack", lambda m, t: m.stack([t, t], axis=1), lambda m, t: m.stack([t, t], dim=1)),
    ("unsqueeze", lambda m, t: t.unsqueeze(axis=0), lambda m, t: t.unsqueeze(dim=0)),
    ("squeeze", lambda m, t: t[:1].squeeze(axis=0), lambda m, t: t[:1].squeeze(dim=0)),
    ("any", lambda m, t: (t > 0).any(axis=1), lambda m, t: (t > 0).any(dim=1)),
    ("nansum", lambda m, t: t.nansum(axis=0), lambda m, t: t.nansum(dim=0)),
]


@pytest.mark.parametrize(("name", "numpy_names", "torch_names"), CASES, ids=[c[0] for c in CASES])
def test_numpy_names_mean_what_dim_and_keepdim_do(name, numpy_names, torch_names):
    t = tensor.tensor(A)
    assert_close(numpy_names(tensor, t), torch_names(tensor, t))


@pytest.mark.parametrize(("name", "numpy_names", "torch_names"), CASES, ids=[c[0] for c in CASES])
def test_numpy_names_match_torch(torch, name, numpy_names, torch_names):
    assert_close(numpy_names(tensor, tensor.tensor(A)), numpy_names(torch, torch.tensor(A)).numpy())


def test_both_spellings_at_once_raise_type_error():
    with pytest.raises(TypeError, match="sum\\(\\) got multiple values for argument 'dim'"):
        tensor.ones(2, 3).sum(dim=0, axis=0)


def test_wrapped_functions_keep_their_names_and_docs():
    assert tensor.sum.__name__ == "sum" and tensor.sum.__doc__ == tensor.ops.sum.__doc__
    assert tensor.Tensor.mean.__name__ == "mean"
    assert tensor.flatten is tensor.ops.flatten  # no dim (and no out=): left as it is


def test_nn_functional_takes_only_dim_as_torch_does():
    # torch.nn.functional.softmax is a Python function there: softmax(x, axis=0) is a TypeError.
    with pytest.raises(TypeError):
        F.softmax(tensor.ones(2, 3), axis=0)
