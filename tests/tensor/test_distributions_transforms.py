"""``tensor.distributions`` transforms, ``TransformedDistribution`` and ``biject_to``/``transform_to``
against torch's: event dims of chains, shapes of transformed distributions, cdf/icdf through
transforms, the Transform API (equality, shapes, caches) and the clamps at the unit interval's ends."""

from __future__ import annotations

import numpy as np
import pytest

import tensor

RNG = np.random.default_rng(31)


def _close(ours, theirs, rtol=1e-10):
    np.testing.assert_allclose(np.asarray(ours.tolist(), dtype=float), np.asarray(theirs.tolist(), dtype=float),
                               rtol=rtol, atol=1e-12)


def _each(torch):
    return ((tensor, tensor.distributions), (torch, torch.distributions))


def test_sigmoid_inverse_clamps_at_the_smallest_normal_number(torch):
    y = np.array([1e-9, 1e-30, 0.5, 1.0])
    for dtype in ("float32", "float64"):
        ours = tensor.distributions.transforms.SigmoidTransform().inv(tensor.tensor(y).to(getattr(tensor, dtype)))
        theirs = torch.distributions.transforms.SigmoidTransform().inv(torch.tensor(y).to(getattr(torch, dtype)))
        _close(ours, theirs, rtol=1e-6)


def test_tanh_inverse_is_infinite_at_the_ends(torch):
    for lib, D in _each(torch):
        assert D.transforms.TanhTransform().inv(lib.tensor([1.0, -1.0])).tolist() == [float("inf"), float("-inf")]


def test_compose_log_abs_det_jacobian_sums_parts_over_the_chain_events(torch):
    x = RNG.standard_normal((4, 2))
    results = []
    for lib, D in _each(torch):
        T = D.transforms
        chain = T.ComposeTransform([T.ExpTransform(), T.AffineTransform(0.0, lib.tensor([2.0, 3.0]), event_dim=1)])
        assert (chain.domain.event_dim, chain.codomain.event_dim) == (1, 1)
        value = lib.tensor(x)
        results.append(chain.log_abs_det_jacobian(value, chain(value)))
    assert results[0].shape == tuple(results[1].shape) == (4,)
    _close(*results)


def test_transforms_adding_event_dims_reshape_the_distribution(torch):
    value = RNG.standard_normal((5, 2, 3))
    made = []
    for lib, D in _each(torch):
        d = D.TransformedDistribution(D.Normal(lib.zeros(2, 3), 1.0),
                                      [D.transforms.AffineTransform(0.0, lib.tensor([1.0, 2.0, 3.0]), event_dim=1)])
        assert (tuple(d.batch_shape), tuple(d.event_shape), d.support.event_dim) == ((2,), (3,), 1)
        assert tuple(d.expand((4, 2)).sample().shape) == (4, 2, 3)
        made.append(d.log_prob(lib.tensor(value)))
    assert made[0].shape == (5, 2)
    _close(*made)


def test_cdf_and_icdf_through_transforms(torch):
    value, q = RNG.uniform(0.2, 3.0, 4), RNG.uniform(0.05, 0.95, 4)
    pairs = []
    for lib, D in _each(torch):
        T = D.transforms
        lognormal = D.LogNormal(lib.tensor(np.array(0.3)), lib.tensor(np.array(1.2)))  # float64, as the values
        decreasing = D.TransformedDistribution(D.Normal(lib.tensor(np.array(0.0)), 1.0),
                                               [T.SigmoidTransform(), T.AffineTransform(1.0, -2.0)])
        pairs.append([lognormal.cdf(lib.tensor(value)), lognormal.icdf(lib.tensor(q)),
                      decreasing.cdf(lib.tensor(q)), decreasing.icdf(lib.tensor(q))])
    for ours, theirs in zip(*pairs):
        _close(ours, theirs, rtol=1e-9)


def test_transform_api_equality_shapes_and_caches(torch):
    for lib, D in _each(torch):
        T = D.transforms
        assert T.ExpTransform() == T.ExpTransform() and T.ExpTransform() != T.SigmoidTransform()
        assert T.AffineTransform(1.0, 2.0) == T.AffineTransform(1.0, 2.0) != T.AffineTransform(1.0, 3.0)
        assert T.ExpTransform().inv == T.ExpTransform().inv
        assert T.ComposeTransform([T.ExpTransform()]) == T.ComposeTransform([T.ExpTransform()])
        assert tuple(T.ExpTransform().forward_shape((3,))) == (3,)
        assert tuple(T.AffineTransform(0.0, lib.ones(2, 1)).forward_shape((3,))) == (2, 3)
        assert tuple(T.StickBreakingTransform().forward_shape((4, 2))) == (4, 3)
        assert tuple(T.StickBreakingTransform().inverse_shape((4, 3))) == (4, 2)
        assert T.ExpTransform().with_cache(1)._cache_size == 1
        assert T.AffineTransform(0.0, 2.0, event_dim=1).with_cache(1).codomain.event_dim == 1
        assert T.AffineTransform(0.0, 2.0, event_dim=1).domain.event_dim == 1
        assert T.identity_transform(lib.ones(2)).tolist() == [1.0, 1.0]
        assert D.AffineTransform is T.AffineTransform
        chain = T.ComposeTransform([T.ExpTransform(), T.AffineTransform(1.0, 2.0)])
        assert chain.inv.inv is chain and abs(chain.inv(chain(lib.ones(1))).item() - 1.0) < 1e-6


@pytest.mark.parametrize("name", ["softplus", "power", "stick_breaking", "softmax", "independent_exp"])
def test_more_transforms_match_torch(torch, name):
    x = RNG.uniform(0.2, 2.0, (3, 4))
    outs = []
    for lib, D in _each(torch):
        T = D.transforms
        t = {"softplus": T.SoftplusTransform(), "power": T.PowerTransform(lib.tensor(1.7)),
             "stick_breaking": T.StickBreakingTransform(), "softmax": T.SoftmaxTransform(),
             "independent_exp": T.IndependentTransform(T.ExpTransform(), 1)}[name]
        value = lib.tensor(x)
        y = t(value)
        ladj = None if name == "softmax" else t.log_abs_det_jacobian(value, y)
        outs.append((y, t.inv(y), ladj))
    for ours, theirs in zip(*outs):
        if theirs is not None:
            _close(ours, theirs, rtol=1e-9)


@pytest.mark.parametrize("make", [
    lambda C, t: C.positive, lambda C, t: C.nonnegative, lambda C, t: C.real, lambda C, t: C.unit_interval,
    lambda C, t: C.greater_than(t([1.0, -2.0])), lambda C, t: C.interval(-1.0, 3.0), lambda C, t: C.less_than(2.0),
    lambda C, t: C.simplex, lambda C, t: C.independent(C.positive, 1), lambda C, t: C.real_vector,
])
def test_biject_to_and_transform_to_match_torch(torch, make):
    x = RNG.standard_normal((3, 2))
    outs = []
    for lib, D in _each(torch):
        constraint = make(D.constraints, lib.tensor)
        value = lib.tensor(x)
        bijection, transform = D.biject_to(constraint), D.transform_to(constraint)
        y = bijection(value)
        assert constraint.check(y).all()
        outs.append((y, bijection.log_abs_det_jacobian(value, y), transform(value), bijection.inv(y)))
    for ours, theirs in zip(*outs):
        _close(ours, theirs, rtol=1e-9)
    with pytest.raises(NotImplementedError):
        tensor.distributions.biject_to(tensor.distributions.constraints.positive_definite)
