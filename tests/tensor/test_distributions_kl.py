"""``tensor.distributions.kl_divergence`` against torch's for the pairs added beside the
same-family ones of test_distributions.py: other same-family pairs, the cross-family closed
forms, the infinite ones where ``q`` misses part of ``p``'s support, and Bernoulli's edges."""

from __future__ import annotations

import numpy as np
import pytest

import tensor

RNG = np.random.default_rng(21)
LOC, SCALE = RNG.standard_normal((3, 2)), RNG.uniform(0.5, 2.0, (3, 2))
CONC, RATE = RNG.uniform(0.5, 3.0, (3, 2)), RNG.uniform(0.5, 2.0, (3, 2))
PROBS = RNG.uniform(0.1, 0.9, (3, 2))
LOW, HIGH = RNG.uniform(0.05, 0.3, (3, 2)), RNG.uniform(0.6, 0.95, (3, 2))

# a family over a library's distributions D and tensor constructor t, with its parameters' variant k
FAMILIES = {
    "normal": lambda D, t, k: D.Normal(t(LOC * k), t(SCALE * k)),
    "uniform": lambda D, t, k: D.Uniform(t(LOW * k), t(HIGH ** k)),
    "exponential": lambda D, t, k: D.Exponential(t(RATE * k)),
    "laplace": lambda D, t, k: D.Laplace(t(LOC * k), t(SCALE)),
    "gumbel": lambda D, t, k: D.Gumbel(t(LOC * k), t(SCALE * k)),
    "gamma": lambda D, t, k: D.Gamma(t(CONC * k), t(RATE)),
    "chi2": lambda D, t, k: D.Chi2(t(CONC * k)),
    "beta": lambda D, t, k: D.Beta(t(CONC * k), t(RATE)),
}
CROSS = [(p, q) for p in FAMILIES for q in FAMILIES
         if p != q and not (p == "chi2" and q == "gamma") and not (p == "gamma" and q == "chi2")]
SAME = {
    "cauchy": lambda D, t, k: D.Cauchy(t(LOC * k), t(SCALE * k)),
    "gumbel": FAMILIES["gumbel"],
    "half_normal": lambda D, t, k: D.HalfNormal(t(SCALE * k)),
    "half_cauchy": lambda D, t, k: D.HalfCauchy(t(SCALE * k)),
    "geometric": lambda D, t, k: D.Geometric(t(PROBS ** k)),
    "binomial": lambda D, t, k: D.Binomial(t(np.full((3, 2), 5.0)), t(PROBS ** k)),
    "transformed": lambda D, t, k: D.TransformedDistribution(D.Normal(t(LOC * k), t(SCALE)),
                                                             [D.transforms.SigmoidTransform()]),
}


def _close(ours, theirs, rtol=1e-9):
    np.testing.assert_allclose(np.asarray(ours.tolist(), dtype=float), np.asarray(theirs.tolist(), dtype=float),
                               rtol=rtol, atol=1e-12)


def _both(torch, make_p, make_q):
    ours = tensor.distributions.kl_divergence(make_p(tensor.distributions, tensor.tensor, 1.0),
                                              make_q(tensor.distributions, tensor.tensor, 1.3))
    theirs = torch.distributions.kl_divergence(make_p(torch.distributions, torch.tensor, 1.0),
                                               make_q(torch.distributions, torch.tensor, 1.3))
    return ours, theirs


@pytest.mark.parametrize(("p", "q"), CROSS, ids=[f"{p}-{q}" for p, q in CROSS])
def test_cross_family_kl_matches_torch(torch, p, q):
    """The value where torch has a form (infinite included), NotImplementedError where it has none."""
    try:
        ours, theirs = _both(torch, FAMILIES[p], FAMILIES[q])
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            torch.distributions.kl_divergence(FAMILIES[p](torch.distributions, torch.tensor, 1.0),
                                              FAMILIES[q](torch.distributions, torch.tensor, 1.3))
        return
    assert ours.shape == tuple(theirs.shape)
    _close(ours, theirs)


@pytest.mark.parametrize("name", list(SAME))
def test_same_family_kl_matches_torch(torch, name):
    ours, theirs = _both(torch, SAME[name], SAME[name])
    _close(ours, theirs)


def test_discrete_cross_family_and_binomial_counts(torch):
    for lib in (tensor, torch):
        D, t = lib.distributions, lib.tensor
        bern, pois = D.Bernoulli(t(PROBS)), D.Poisson(t(RATE))
        assert np.isinf(D.kl_divergence(pois, bern).numpy()).all()
        assert np.isinf(D.kl_divergence(pois, D.Binomial(3, t(PROBS))).numpy()).all()
        with pytest.raises(NotImplementedError, match="total_count"):
            D.kl_divergence(D.Binomial(3, t(PROBS)), D.Binomial(4, t(PROBS)))
        assert np.isinf(D.kl_divergence(D.Binomial(4, t(PROBS)), D.Binomial(3, t(PROBS))).numpy()).all()
        with pytest.raises(NotImplementedError):  # different transforms
            D.kl_divergence(D.TransformedDistribution(D.Normal(0.0, 1.0), [D.transforms.ExpTransform()]),
                            D.TransformedDistribution(D.Normal(0.0, 1.0), [D.transforms.SigmoidTransform()]))
    ours = tensor.distributions.kl_divergence(tensor.distributions.Bernoulli(tensor.tensor(PROBS)),
                                              tensor.distributions.Poisson(tensor.tensor(RATE)))
    _close(ours, torch.distributions.kl_divergence(torch.distributions.Bernoulli(torch.tensor(PROBS)),
                                                   torch.distributions.Poisson(torch.tensor(RATE))))


def test_bernoulli_kl_is_infinite_where_q_misses_an_outcome(torch):
    p, q = np.array([0.3, 0.0, 1.0, 0.3, 0.0, 1.0, 0.5]), np.array([0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.5])
    D = tensor.distributions
    ours = D.kl_divergence(D.Bernoulli(tensor.tensor(p)), D.Bernoulli(tensor.tensor(q)))
    theirs = torch.distributions.kl_divergence(torch.distributions.Bernoulli(torch.tensor(p)),
                                               torch.distributions.Bernoulli(torch.tensor(q)))
    assert ours.tolist() == theirs.tolist()  # inf, inf, inf, inf, 0, 0, 0
