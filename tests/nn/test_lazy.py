"""Lazy modules: the first input fixes the size, then the module is the ordinary one."""

from __future__ import annotations

import pytest

import nn
import tensor


@pytest.mark.parametrize(
    "name, args, shape, becomes, size_attr, size",
    [
        ("LazyLinear", (3,), (2, 5), nn.Linear, "in_features", 5),
        ("LazyConv1d", (4, 3), (2, 6, 8), nn.Conv1d, "in_channels", 6),
        ("LazyConv2d", (4, 3), (6, 8, 8), nn.Conv2d, "in_channels", 6),  # unbatched
        ("LazyConv3d", (2, 1), (1, 3, 2, 2, 2), nn.Conv3d, "in_channels", 3),
        ("LazyConvTranspose1d", (4, 3), (2, 5, 4), nn.ConvTranspose1d, "in_channels", 5),
        ("LazyConvTranspose2d", (4, 2), (1, 5, 3, 3), nn.ConvTranspose2d, "in_channels", 5),
        ("LazyConvTranspose3d", (2, 1), (1, 3, 2, 2, 2), nn.ConvTranspose3d, "in_channels", 3),
        ("LazyBatchNorm1d", (), (4, 7), nn.BatchNorm1d, "num_features", 7),
        ("LazyBatchNorm1d", (), (4, 7, 3), nn.BatchNorm1d, "num_features", 7),
        ("LazyBatchNorm2d", (), (2, 3, 4, 4), nn.BatchNorm2d, "num_features", 3),
        ("LazyBatchNorm3d", (), (2, 3, 2, 2, 2), nn.BatchNorm3d, "num_features", 3),
        ("LazyInstanceNorm1d", (), (2, 3, 5), nn.InstanceNorm1d, "num_features", 3),
        ("LazyInstanceNorm2d", (), (2, 3, 4, 4), nn.InstanceNorm2d, "num_features", 3),
        ("LazyInstanceNorm3d", (), (2, 3, 2, 2, 2), nn.InstanceNorm3d, "num_features", 3),
    ],
)
def test_first_call_materializes(name, args, shape, becomes, size_attr, size):
    module = getattr(nn, name)(*args)
    assert list(module.parameters()) == [] and module.has_uninitialized_params()
    out = module(tensor.randn(*shape))
    assert type(module) is becomes and getattr(module, size_attr) == size
    defaults = {"affine": True, "track_running_stats": True} if name.startswith("LazyInstanceNorm") else {}
    expected = becomes(size, *args, **defaults)  # PyTorch's LazyInstanceNorm defaults differ from InstanceNorm's
    assert [tuple(p.shape) for p in module.parameters()] == [tuple(p.shape) for p in expected.parameters()]
    assert out.shape == expected(tensor.randn(*shape)).shape


def test_keeps_training_mode_and_hooks():
    module = nn.LazyLinear(2).eval()
    calls = []
    module.register_forward_hook(lambda m, a, o: calls.append(o.shape))
    module(tensor.ones(3, 4))
    assert not module.training and calls == [(3, 2)]


def test_hooks_and_their_options_survive_materialization():
    log = []
    lazy = nn.LazyLinear(2)
    handle = lazy.register_forward_hook(lambda mod, args, kwargs, out: log.append(sorted(kwargs)), with_kwargs=True)
    lazy(tensor.ones(1, 3))
    handle.remove()
    lazy(tensor.ones(1, 3))
    assert log == [[]] and len(lazy._forward_hooks) == 0


@pytest.mark.parametrize(
    "lazy, concrete",
    [
        (lambda: nn.LazyLinear(4), lambda: nn.Linear(7, 4)),
        (lambda: nn.LazyConv2d(4, 3), lambda: nn.Conv2d(3, 4, 3)),
        (lambda: nn.LazyConv1d(4, 3, groups=2), lambda: nn.Conv1d(6, 4, 3, groups=2)),
        (lambda: nn.LazyConvTranspose2d(4, 3), lambda: nn.ConvTranspose2d(5, 4, 3)),
        (lambda: nn.LazyBatchNorm1d(), lambda: nn.BatchNorm1d(7)),
        (lambda: nn.LazyInstanceNorm2d(), lambda: nn.InstanceNorm2d(5, affine=True, track_running_stats=True)),
    ],
)
def test_load_state_dict_before_the_first_call_materializes(lazy, concrete):
    source, module = concrete(), lazy()
    module.load_state_dict(source.state_dict())
    assert type(module) is type(source) and repr(module) == repr(source)
    for name, value in source.state_dict().items():
        assert tensor.equal(module.state_dict()[name], value), name


def test_a_lazy_module_inside_a_container_loads_a_checkpoint():
    model = nn.Sequential(nn.LazyLinear(3), nn.ReLU(), nn.LazyLinear(2))
    model.load_state_dict(nn.Sequential(nn.Linear(5, 3), nn.ReLU(), nn.Linear(3, 2)).state_dict())
    assert model(tensor.ones(1, 5)).shape == (1, 2)


def test_lazy_instance_norm_has_pytorchs_defaults(torch):
    ours, theirs = nn.LazyInstanceNorm1d(), torch.nn.LazyInstanceNorm1d()
    ours(tensor.ones(2, 3, 5))
    theirs(torch.ones(2, 3, 5))
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
