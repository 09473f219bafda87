"""nn.utils.parametrize, parametrizations.weight_norm/spectral_norm and the hook-based
weight_norm/spectral_norm against torch: state_dict names, values, gradients, removal."""

from __future__ import annotations

import numpy as np
import pytest

import nn
import tensor
from nn.utils import parametrizations, parametrize
from tests.helpers import assert_close
from tests.nn.oracle import run_both

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4)).astype("float32")


class Symmetric(nn.Module):
    def forward(self, w):
        return w.triu() + w.triu(1).mT


def _load_from(ours, theirs):
    state = {k: tensor.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()}
    assert list(state) == list(ours.state_dict())
    ours.load_state_dict(state)


def test_register_and_remove_a_parametrization_like_torch(torch):
    class TorchSymmetric(torch.nn.Module):
        def forward(self, w):
            return w.triu() + w.triu(1).mT

    ours, theirs = nn.Linear(4, 4), torch.nn.Linear(4, 4)
    parametrize.register_parametrization(ours, "weight", Symmetric())
    torch.nn.utils.parametrize.register_parametrization(theirs, "weight", TorchSymmetric())
    _load_from(ours, theirs)
    assert type(ours).__name__ == type(theirs).__name__ == "ParametrizedLinear"
    assert parametrize.is_parametrized(ours, "weight") and not parametrize.is_parametrized(ours, "bias")
    assert parametrize.type_before_parametrizations(ours) is nn.Linear
    run_both(ours, theirs, torch, RNG.standard_normal((3, 4)).astype("float32"))
    with parametrize.cached():
        assert ours.weight is ours.weight
    parametrize.remove_parametrizations(ours, "weight")
    torch.nn.utils.parametrize.remove_parametrizations(theirs, "weight")
    assert type(ours) is nn.Linear and list(ours.state_dict()) == list(theirs.state_dict())
    assert_close(ours.weight, ours.weight.detach().numpy().T)


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_parametrization_matches_torch(dim, torch):
    ours, theirs = nn.Linear(4, 3), torch.nn.Linear(4, 3)
    parametrizations.weight_norm(ours, dim=dim)
    torch.nn.utils.parametrizations.weight_norm(theirs, dim=dim)
    _load_from(ours, theirs)
    run_both(ours, theirs, torch, X, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("module", ["linear", "conv_transpose"])
def test_spectral_norm_parametrization_matches_torch(module, torch):
    if module == "linear":
        ours, theirs = nn.Linear(4, 3), torch.nn.Linear(4, 3)
        x = X
    else:
        ours, theirs = nn.ConvTranspose1d(2, 3, 2), torch.nn.ConvTranspose1d(2, 3, 2)
        x = RNG.standard_normal((2, 2, 5)).astype("float32")
    parametrizations.spectral_norm(ours, n_power_iterations=2)
    torch.nn.utils.parametrizations.spectral_norm(theirs, n_power_iterations=2)
    _load_from(ours, theirs)  # the power-iteration vectors come from torch's state
    for _ in range(2):  # training: each forward refines u and v
        run_both(ours, theirs, torch, x, rtol=1e-4, atol=1e-5)
        for key, value in theirs.state_dict().items():
            assert_close(ours.state_dict()[key], value.numpy(), rtol=1e-4, atol=1e-5)


def test_hook_weight_norm_matches_torch_and_removes(torch):
    ours, theirs = nn.Linear(4, 3), torch.nn.Linear(4, 3)
    nn.utils.weight_norm(ours)
    torch.nn.utils.weight_norm(theirs)
    _load_from(ours, theirs)
    assert sorted(dict(ours.named_parameters())) == ["bias", "weight_g", "weight_v"]
    run_both(ours, theirs, torch, X, rtol=1e-5, atol=1e-5)
    nn.utils.remove_weight_norm(ours)
    torch.nn.utils.remove_weight_norm(theirs)
    assert_close(ours.weight, theirs.weight.detach().numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        nn.utils.remove_weight_norm(ours)


def test_hook_spectral_norm_matches_torch(torch):
    ours, theirs = nn.Linear(4, 3), torch.nn.Linear(4, 3)
    nn.utils.spectral_norm(ours)
    torch.nn.utils.spectral_norm(theirs)
    _load_from(ours, theirs)
    for _ in range(2):
        run_both(ours, theirs, torch, X, rtol=1e-4, atol=1e-5)
    nn.utils.remove_spectral_norm(ours)
    assert list(ours.state_dict()) == ["bias", "weight"]


class _FirstRow(nn.Module):
    def forward(self, x):
        return x[:1]


class _Double(nn.Module):
    def forward(self, x):
        return x.double()


class _NotATensor(nn.Module):
    def forward(self, x):
        return 5


class _Same(nn.Module):
    def forward(self, x):
        return x


@pytest.mark.parametrize("parametrization, message", [
    (_FirstRow, "may not change the shape of the tensor"),
    (_Double, "may not change the dtype of the tensor"),
    (_NotATensor, "A parametrization must return a tensor"),
])
def test_unsafe_false_checks_the_parametrization(parametrization, message):
    with pytest.raises(ValueError, match=message):
        parametrize.register_parametrization(nn.Linear(3, 3), "weight", parametrization())
    appended_to = parametrize.register_parametrization(nn.Linear(3, 3), "weight", _Same())
    with pytest.raises(ValueError, match=message):
        parametrize.register_parametrization(appended_to, "weight", parametrization())
    if parametrization is not _NotATensor:
        unsafe = parametrize.register_parametrization(nn.Linear(3, 3), "weight", parametrization(), unsafe=True)
        assert unsafe.parametrizations.weight.unsafe


@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder"])
@pytest.mark.parametrize("use_trivialization", [True, False])
@pytest.mark.parametrize("shape", [(3, 3), (5, 3), (3, 5)])
def test_orthogonal_gives_orthonormal_columns_or_rows(orthogonal_map, use_trivialization, shape):
    m = nn.Linear(shape[1], shape[0])
    parametrizations.orthogonal(m, orthogonal_map=orthogonal_map, use_trivialization=use_trivialization)
    q = m.weight if shape[0] >= shape[1] else m.weight.mT
    assert_close((q.mT @ q).detach().numpy(), np.eye(q.shape[1], dtype=np.float32), atol=1e-5, rtol=0)
    expected_keys = ["bias", "parametrizations.weight.original"] + \
        ["parametrizations.weight.0.base"] * use_trivialization
    assert list(m.state_dict()) == expected_keys
    m.weight.sum().backward()
    assert m.parametrizations.weight.original.grad is not None


@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "householder"])
def test_orthogonal_initial_value_matches_torch(torch, orthogonal_map):
    ours, theirs = nn.Linear(3, 4), torch.nn.Linear(3, 4)
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(ours.weight.detach().numpy()))
    parametrizations.orthogonal(ours, orthogonal_map=orthogonal_map)
    torch.nn.utils.parametrizations.orthogonal(theirs, orthogonal_map=orthogonal_map)
    assert_close(ours.weight.detach().numpy(), theirs.weight.detach().numpy(), atol=1e-5, rtol=1e-5)


def test_orthogonal_and_weight_norm_errors():
    with pytest.raises(ValueError, match='orthogonal_map has to be one of "matrix_exp"'):
        parametrizations.orthogonal(nn.Linear(3, 3), orthogonal_map="qr")
    with pytest.raises(ValueError, match="Got a tensor of 1 dimensions"):
        parametrizations.orthogonal(nn.Linear(3, 3), "bias")
    with pytest.raises(IndexError, match="Dimension out of range"):
        parametrizations.weight_norm(nn.Linear(4, 3), dim=5)


def test_assigning_without_a_right_inverse_raises_like_torch(torch):
    m = parametrize.register_parametrization(nn.Linear(3, 3), "weight", Symmetric())
    with pytest.raises(RuntimeError, match="does not implement right_inverse"):
        m.weight = tensor.arange(9.0).reshape(3, 3)
    o = parametrizations.orthogonal(nn.Linear(3, 3), orthogonal_map="cayley", use_trivialization=False)
    with pytest.raises(NotImplementedError):
        o.weight = tensor.eye(3)


@pytest.mark.parametrize("dim, name", [(-2, "weight"), (0, "bias"), (-1, "bias")])
def test_weight_norm_g_shape_like_torch(torch, dim, name):
    ours = parametrizations.weight_norm(nn.Linear(5, 4), name, dim=dim)
    theirs = torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(5, 4), name, dim=dim)
    assert ours.parametrizations[name].original0.shape == tuple(theirs.parametrizations[name].original0.shape)
    legacy = nn.utils.weight_norm(nn.Linear(5, 4), name, dim=dim)
    assert getattr(legacy, name + "_g").shape == tuple(theirs.parametrizations[name].original0.shape)
    _load_from(ours, theirs)
    assert_close(getattr(ours, name), getattr(theirs, name).detach().numpy(), atol=1e-6)


def test_legacy_weight_and_spectral_norm_pickle_as_torch():
    import pickle  # noqa: PLC0415

    x = tensor.tensor(X)
    for model in (nn.utils.weight_norm(nn.Linear(4, 3)), nn.utils.spectral_norm(nn.Linear(4, 3))):
        model(x)
        copy = pickle.loads(pickle.dumps(model))
        assert copy.weight.is_leaf
        assert_close(copy(x), model(x).detach().numpy())
    copy = pickle.loads(pickle.dumps(nn.utils.weight_norm(nn.Linear(4, 3))))
    copy(x).sum().backward()
    assert copy.weight_g.grad is not None


def test_legacy_norm_argument_checks_like_torch():
    with pytest.raises(ValueError, match="n_power_iterations"):
        nn.utils.spectral_norm(nn.Linear(3, 3), n_power_iterations=0)
    with pytest.raises(KeyError):
        nn.utils.spectral_norm(nn.Linear(3, 3), "foo")
    with pytest.raises(IndexError):
        nn.utils.weight_norm(nn.Linear(3, 3), dim=2)
    with pytest.raises(ValueError):
        parametrizations.weight_norm(nn.Linear(3, 3), "foo")
