"""``tensor.distributions`` (tensor/distributions/, Note [Distribution shapes]) against torch's:
densities, moments, entropies, KL divergences, shapes, validation errors, and gradients through
``rsample`` and ``log_prob`` by float64 finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import tensor
from autograd import gradcheck

RNG = np.random.default_rng(11)
LOC, SCALE = RNG.standard_normal((3, 2)), RNG.uniform(0.5, 2.0, (3, 2))
LOW, HIGH = RNG.uniform(-2, 0, 4), RNG.uniform(0.5, 2, 4)
PROBS = RNG.uniform(0.05, 0.95, (2, 3))
LOGITS = RNG.standard_normal((2, 4))
RATE = RNG.uniform(0.5, 3.0, 5)
_A = RNG.standard_normal((2, 3, 3))
COV = _A @ _A.transpose(0, 2, 1) + 3 * np.eye(3)
MVN_LOC = RNG.standard_normal((2, 3))
TRIL = np.linalg.cholesky(COV)

# (name, make(m, t) over a library m and its tensor constructor t, a value in the support)
CASES = [
    ("normal", lambda m, t: m.distributions.Normal(t(LOC), t(SCALE)), RNG.standard_normal((3, 2))),
    ("normal_broadcast", lambda m, t: m.distributions.Normal(t(LOC), 1.5), RNG.standard_normal((5, 3, 2))),
    ("uniform", lambda m, t: m.distributions.Uniform(t(LOW), t(HIGH)), RNG.uniform(0, 0.5, 4)),
    ("bernoulli_probs", lambda m, t: m.distributions.Bernoulli(probs=t(PROBS)), (RNG.random((2, 3)) > 0.5) * 1.0),
    ("bernoulli_logits", lambda m, t: m.distributions.Bernoulli(logits=t(LOGITS)), (RNG.random((2, 4)) > 0.5) * 1.0),
    ("categorical_probs", lambda m, t: m.distributions.Categorical(probs=t(PROBS)), np.array([0, 2])),
    ("categorical_logits", lambda m, t: m.distributions.Categorical(logits=t(LOGITS)), np.array([[3, 1], [0, 2]])),
    ("independent", lambda m, t: m.distributions.Independent(m.distributions.Normal(t(LOC), t(SCALE)), 1),
     RNG.standard_normal((3, 2))),
    ("exponential", lambda m, t: m.distributions.Exponential(t(RATE)), RNG.uniform(0, 3, 5)),
    ("laplace", lambda m, t: m.distributions.Laplace(t(LOC), t(SCALE)), RNG.standard_normal((3, 2))),
    ("poisson", lambda m, t: m.distributions.Poisson(t(RATE)), np.array([0.0, 1.0, 4.0, 2.0, 7.0])),
    ("onehot", lambda m, t: m.distributions.OneHotCategorical(probs=t(PROBS)), np.eye(3)[[2, 0]]),
    ("mvn_covariance", lambda m, t: m.distributions.MultivariateNormal(t(MVN_LOC), covariance_matrix=t(COV)),
     RNG.standard_normal((4, 2, 3))),
    ("mvn_precision", lambda m, t: m.distributions.MultivariateNormal(t(MVN_LOC[0]), precision_matrix=t(COV)),
     RNG.standard_normal((2, 3))),
    ("mvn_scale_tril", lambda m, t: m.distributions.MultivariateNormal(t(MVN_LOC), scale_tril=t(TRIL)),
     RNG.standard_normal(3)),
    ("lognormal", lambda m, t: m.distributions.LogNormal(t(LOC), t(SCALE)), RNG.uniform(0.1, 3.0, (3, 2))),
]
GAMMA_RNG = np.random.default_rng(12)
CONC, GAMMA_RATE = GAMMA_RNG.uniform(0.3, 3.0, (3, 2)), GAMMA_RNG.uniform(0.5, 2.0, (3, 2))
DIRICHLET = np.concatenate([GAMMA_RNG.uniform(0.5, 3.0, (2, 4)), GAMMA_RNG.uniform(0.2, 0.9, (1, 4))])  # last: all < 1
DF = np.array([0.8, 1.5, 3.0, 6.0])  # the mean's and variance's branches
CASES += [
    ("gamma", lambda m, t: m.distributions.Gamma(t(CONC), t(GAMMA_RATE)), GAMMA_RNG.uniform(0.1, 4.0, (3, 2))),
    ("gamma_scalar_rate", lambda m, t: m.distributions.Gamma(t(CONC[0]), 2.0), GAMMA_RNG.uniform(0.1, 4.0, (4, 2))),
    ("chi2", lambda m, t: m.distributions.Chi2(t(CONC * 3)), GAMMA_RNG.uniform(0.1, 9.0, (3, 2))),
    ("beta", lambda m, t: m.distributions.Beta(t(CONC), t(GAMMA_RATE)), GAMMA_RNG.uniform(0.05, 0.95, (3, 2))),
    ("dirichlet", lambda m, t: m.distributions.Dirichlet(t(DIRICHLET)), GAMMA_RNG.dirichlet(np.ones(4), (5, 3))),
    ("student_t", lambda m, t: m.distributions.StudentT(t(DF), 0.5, t(SCALE.ravel()[:4])),
     GAMMA_RNG.standard_normal((2, 4))),
]
COUNTS = np.array([[1.0, 2, 3, 0], [6, 0, 0, 0], [0, 0, 0, 6]])
CASES += [
    ("cauchy", lambda m, t: m.distributions.Cauchy(t(LOC), t(SCALE)), GAMMA_RNG.standard_normal((3, 2))),
    ("gumbel", lambda m, t: m.distributions.Gumbel(t(LOC), t(SCALE)), GAMMA_RNG.standard_normal((3, 2))),
    ("half_normal", lambda m, t: m.distributions.HalfNormal(t(SCALE)), GAMMA_RNG.uniform(0, 3, (3, 2))),
    ("half_cauchy", lambda m, t: m.distributions.HalfCauchy(t(SCALE)), GAMMA_RNG.uniform(0, 3, (3, 2))),
    ("geometric", lambda m, t: m.distributions.Geometric(t(PROBS)), np.array([[0.0, 1, 3], [7, 2, 0]])),
    ("geometric_logits", lambda m, t: m.distributions.Geometric(logits=t(LOGITS)), np.array([0.0, 1, 3, 2])),
    ("binomial", lambda m, t: m.distributions.Binomial(10, t(PROBS)), np.array([[0.0, 1, 10], [7, 2, 0]])),
    ("binomial_logits", lambda m, t: m.distributions.Binomial(t(np.full(4, 5.0)), logits=t(LOGITS)),
     np.array([0.0, 5, 3, 2])),
    ("multinomial", lambda m, t: m.distributions.Multinomial(6, t(DIRICHLET / DIRICHLET.sum(-1, keepdims=True))),
     COUNTS),
    ("mixture", lambda m, t: m.distributions.MixtureSameFamily(
        m.distributions.Categorical(t(PROBS)), m.distributions.Normal(t(LOC[:2].repeat(2, 1)[:, :3]), 1.5)),
     GAMMA_RNG.standard_normal((4, 2))),
    ("mixture_of_vectors", lambda m, t: m.distributions.MixtureSameFamily(
        m.distributions.Categorical(t(PROBS[0])),
        m.distributions.Independent(m.distributions.Normal(t(LOC), t(SCALE)), 1)),
     GAMMA_RNG.standard_normal((5, 2))),
]
IDS = [c[0] for c in CASES]


def _lib(lib):
    return lambda a: lib.tensor(a) if a.dtype.kind != "i" else lib.tensor(a).long()


def _close(ours, theirs, **kw):
    np.testing.assert_allclose(np.asarray(ours.tolist(), dtype=float), np.asarray(theirs.tolist(), dtype=float),
                               rtol=kw.get("rtol", 1e-10), atol=kw.get("atol", 1e-12))


@pytest.mark.parametrize(("name", "make", "value"), CASES, ids=IDS)
def test_values_and_shapes_match_torch(torch, name, make, value):
    ours, theirs = make(tensor, _lib(tensor)), make(torch, _lib(torch))
    assert (ours.batch_shape, ours.event_shape) == (tuple(theirs.batch_shape), tuple(theirs.event_shape))
    _close(ours.log_prob(_lib(tensor)(value)), theirs.log_prob(_lib(torch)(value)))
    for part in ("entropy", "mean", "variance", "stddev", "mode"):
        def value_of(dist, part=part):
            return dist.entropy() if part == "entropy" else getattr(dist, part)

        try:
            expected = value_of(theirs)
        except NotImplementedError:  # no closed form (a Poisson's entropy, a mixture's mode): neither has one
            with pytest.raises(NotImplementedError):
                value_of(ours)
            continue
        # torch's Multinomial entropy takes lgamma of an int64 count, in float32
        _close(value_of(ours), expected, rtol=1e-7 if name == "multinomial" else 1e-10)
    for shape in ((), (4,), (2, 3)):
        assert ours.sample(shape).shape == tuple(theirs.sample(shape).shape)
        assert str(ours.sample(shape).dtype).split(".")[-1] == str(theirs.sample(shape).dtype).split(".")[-1]


@pytest.mark.parametrize(
    "name", ["normal", "uniform", "exponential", "laplace", "gamma", "chi2", "cauchy", "gumbel", "half_normal",
             "half_cauchy", "mixture"])
def test_cdf_and_icdf_match_torch(torch, name):
    make = dict((c[0], c[1]) for c in CASES)[name]
    ours, theirs = make(tensor, _lib(tensor)), make(torch, _lib(torch))
    value = np.asarray((ours.mode if name.endswith("cauchy") else ours.mean).tolist()) + 0.1  # a Cauchy has no mean
    _close(ours.cdf(tensor.tensor(value)), theirs.cdf(torch.tensor(value)))
    if name in ("gamma", "chi2", "mixture"):  # no icdf in either
        return
    q = RNG.uniform(0.1, 0.9, np.shape(value))
    _close(ours.icdf(tensor.tensor(q)), theirs.icdf(torch.tensor(q)), rtol=1e-9)


def test_samples_follow_the_distribution():
    tensor.manual_seed(0)
    draws = tensor.distributions.Normal(tensor.tensor(LOC), tensor.tensor(SCALE)).sample((20000,)).numpy()
    np.testing.assert_allclose(draws.mean(0), LOC, atol=0.05)
    np.testing.assert_allclose(draws.std(0), SCALE, rtol=0.03)
    cat = tensor.distributions.Categorical(probs=tensor.tensor(PROBS)).sample((20000,)).numpy()
    counts = np.stack([(cat == k).mean(0) for k in range(3)], -1)
    np.testing.assert_allclose(counts, PROBS / PROBS.sum(-1, keepdims=True), atol=0.02)
    bern = tensor.distributions.Bernoulli(probs=tensor.tensor(PROBS)).sample((20000,)).numpy()
    np.testing.assert_allclose(bern.mean(0), PROBS, atol=0.02)
    counts = tensor.distributions.Poisson(tensor.tensor(RATE)).sample((20000,)).numpy()
    np.testing.assert_allclose(counts.mean(0), RATE, rtol=0.05)
    mvn = tensor.distributions.MultivariateNormal(tensor.tensor(MVN_LOC[0]), covariance_matrix=tensor.tensor(COV[0]))
    vectors = mvn.sample((40000,)).numpy()
    np.testing.assert_allclose(np.cov(vectors.T), COV[0], atol=0.15 * np.abs(COV[0]).max())
    D = tensor.distributions
    for dist, mean, var in ((D.Exponential(tensor.tensor(RATE)), 1 / RATE, 1 / RATE**2),
                            (D.Laplace(tensor.tensor(LOC), tensor.tensor(SCALE)), LOC, 2 * SCALE**2)):
        draws = dist.sample((40000,)).numpy()
        np.testing.assert_allclose(draws.mean(0), mean, atol=0.05 * np.abs(mean).max() + 0.03)
        np.testing.assert_allclose(draws.var(0), var, rtol=0.1)
    uni = tensor.distributions.Uniform(tensor.tensor(LOW), tensor.tensor(HIGH)).sample((20000,)).numpy()
    assert (uni >= LOW).all() and (uni < HIGH).all()
    np.testing.assert_allclose(uni.mean(0), (LOW + HIGH) / 2, atol=0.05)


# (p, q) over a library's distributions D and its tensor constructor t
KL_PAIRS = [
    ("normal", lambda D, t: (D.Normal(t(LOC), t(SCALE)), D.Normal(0.5, t(SCALE[::-1].copy())))),
    ("bernoulli", lambda D, t: (D.Bernoulli(probs=t(PROBS)), D.Bernoulli(logits=t(LOGITS[:, :3])))),
    ("categorical", lambda D, t: (D.Categorical(probs=t(PROBS)), D.Categorical(logits=t(LOGITS[:, :3])))),
    ("uniform", lambda D, t: (D.Uniform(t(LOW), t(HIGH)), D.Uniform(t(LOW - 1), t(HIGH * 2)))),
    ("uniform_outside", lambda D, t: (D.Uniform(t(LOW), t(HIGH)), D.Uniform(t(LOW + 0.1), t(HIGH)))),
    ("independent", lambda D, t: tuple(D.Independent(D.Normal(t(LOC), t(s)), 1) for s in (SCALE, SCALE**2))),
    ("exponential", lambda D, t: (D.Exponential(t(RATE)), D.Exponential(t(RATE[::-1].copy())))),
    ("laplace", lambda D, t: (D.Laplace(t(LOC), t(SCALE)), D.Laplace(0.3, t(SCALE**2)))),
    ("poisson", lambda D, t: (D.Poisson(t(RATE)), D.Poisson(t(RATE[::-1].copy())))),
    ("onehot", lambda D, t: (D.OneHotCategorical(probs=t(PROBS)), D.OneHotCategorical(logits=t(LOGITS[:, :3])))),
    ("lognormal", lambda D, t: (D.LogNormal(t(LOC), t(SCALE)), D.LogNormal(0.2, t(SCALE**2)))),
    ("mvn", lambda D, t: (D.MultivariateNormal(t(MVN_LOC), covariance_matrix=t(COV)),
                          D.MultivariateNormal(t(MVN_LOC[::-1].copy()), precision_matrix=t(COV[::-1].copy())))),
    ("gamma", lambda D, t: (D.Gamma(t(CONC), t(GAMMA_RATE)), D.Gamma(t(GAMMA_RATE * 2), t(CONC)))),
    ("beta", lambda D, t: (D.Beta(t(CONC), t(GAMMA_RATE)), D.Beta(t(GAMMA_RATE), 0.7))),
    ("dirichlet", lambda D, t: (D.Dirichlet(t(DIRICHLET)), D.Dirichlet(t(DIRICHLET[::-1].copy())))),
]


@pytest.mark.parametrize(("name", "pair"), KL_PAIRS, ids=[k[0] for k in KL_PAIRS])
def test_kl_divergence_matches_torch(torch, name, pair):
    p, q = pair(tensor.distributions, _lib(tensor))
    tp, tq = pair(torch.distributions, _lib(torch))
    _close(tensor.distributions.kl_divergence(p, q), torch.distributions.kl_divergence(tp, tq))


def test_kl_registry():
    D = tensor.distributions
    with pytest.raises(NotImplementedError, match="No KL"):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Bernoulli(probs=0.5))

    class Wider(D.Normal):
        pass

    assert D.kl_divergence(Wider(0.0, 2.0), D.Normal(0.0, 1.0)).item() > 0  # found through the MRO

    @D.register_kl(Wider, D.Normal)
    def _kl(p, q):
        return tensor.tensor(-1.0)

    assert D.kl_divergence(Wider(0.0, 2.0), D.Normal(0.0, 1.0)).item() == -1.0
    with pytest.raises(TypeError, match="subclass of Distribution"):
        D.register_kl(int, D.Normal)


def test_validation_errors_are_torchs(torch):
    for lib in (tensor, torch):
        D = lib.distributions
        with pytest.raises(ValueError, match="Expected parameter scale"):
            D.Normal(lib.zeros(2), -lib.ones(2))
        with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, but not both"):
            D.Bernoulli()
        with pytest.raises(ValueError, match="not broadcastable"):
            D.Normal(lib.zeros(2), lib.ones(2)).log_prob(lib.ones(3))
        with pytest.raises(ValueError, match="within the support"):
            D.Bernoulli(probs=lib.tensor([0.3])).log_prob(lib.tensor([0.5]))
        with pytest.raises(ValueError, match="within the support"):
            D.Categorical(probs=lib.tensor([0.5, 0.5])).log_prob(lib.tensor(2))
        with pytest.raises(ValueError):
            D.Uniform(1.0, 0.0)
        with pytest.raises(ValueError, match="Exactly one of covariance_matrix or precision_matrix or scale_tril"):
            D.MultivariateNormal(lib.zeros(2))
        with pytest.raises(ValueError, match="covariance_matrix"):
            D.MultivariateNormal(lib.zeros(2), covariance_matrix=lib.tensor([[1.0, 2.0], [2.0, 1.0]]))
        with pytest.raises(ValueError, match="within the support"):
            D.Poisson(lib.ones(2)).log_prob(lib.tensor([0.5, 1.0]))
        with pytest.raises(ValueError, match="within the support"):
            D.OneHotCategorical(probs=lib.tensor([0.5, 0.5])).log_prob(lib.tensor([1.0, 1.0]))
        D.Normal(lib.zeros(2), -lib.ones(2), validate_args=False)  # unchecked when asked


def test_rsample_and_log_prob_gradients():
    loc = tensor.tensor(LOC[0], requires_grad=True)
    scale = tensor.tensor(SCALE[0], requires_grad=True)

    def reparameterised(loc, scale):
        tensor.manual_seed(1)  # the same noise at every evaluation
        return tensor.distributions.Normal(loc, scale).rsample((3,))

    assert gradcheck(reparameterised, (loc, scale))
    value = tensor.tensor(RNG.standard_normal(2))
    assert gradcheck(lambda loc, scale: tensor.distributions.Normal(loc, scale).log_prob(value), (loc, scale))
    logits = tensor.tensor(LOGITS, requires_grad=True)
    index = tensor.tensor([1, 3]).long()
    assert gradcheck(lambda lg: tensor.distributions.Categorical(logits=lg).log_prob(index), (logits,))
    assert gradcheck(lambda lg: tensor.distributions.Bernoulli(logits=lg).entropy(), (logits,))
    low, high = tensor.tensor(LOW, requires_grad=True), tensor.tensor(HIGH, requires_grad=True)

    def uniform_draws(low, high):
        tensor.manual_seed(2)
        return tensor.distributions.Uniform(low, high).rsample((2,))

    assert gradcheck(uniform_draws, (low, high))
    rate = tensor.tensor(RATE, requires_grad=True)

    def exponential_and_laplace_draws(rate, loc, scale):
        tensor.manual_seed(3)
        D = tensor.distributions
        return D.Exponential(rate).rsample(), D.Laplace(loc, scale).rsample((2,))

    assert gradcheck(exponential_and_laplace_draws, (rate, loc, scale))
    mvn_loc = tensor.tensor(MVN_LOC[0], requires_grad=True)
    tril = tensor.tensor(np.linalg.cholesky(COV[0]), requires_grad=True)
    vectors = tensor.tensor(RNG.standard_normal((4, 3)))

    def mvn(loc, tril):
        tensor.manual_seed(4)
        d = tensor.distributions.MultivariateNormal(loc, scale_tril=tril.tril(), validate_args=False)
        return d.log_prob(vectors), d.rsample((2,)), d.entropy()

    assert gradcheck(mvn, (mvn_loc, tril))


def test_expand_enumerate_support_and_repr(torch):
    for lib in (tensor, torch):
        D = lib.distributions
        n = D.Normal(lib.zeros(2), lib.ones(2)).expand((3, 2))
        assert tuple(n.batch_shape) == (3, 2) and tuple(n.sample().shape) == (3, 2)
        b = D.Bernoulli(probs=lib.tensor([0.2, 0.7]))
        assert b.enumerate_support().tolist() == [[0.0, 0.0], [1.0, 1.0]]
        c = D.Categorical(logits=lib.zeros(2, 3))
        assert c.enumerate_support().tolist() == [[0, 0], [1, 1], [2, 2]]
        assert tuple(c.expand((4, 2)).sample().shape) == (4, 2)
        assert tuple(D.Independent(D.Normal(lib.zeros(3, 2), 1.0), 1).expand((5, 3)).event_shape) == (2,)
    assert repr(tensor.distributions.Bernoulli(probs=tensor.tensor([0.3]))) == "Bernoulli(probs: tensor([0.3000]))"
    assert repr(tensor.distributions.Normal(tensor.zeros(2), 1.0)) == "Normal(loc: (2,), scale: (2,))"


# (name, transforms over a library's transforms module T and tensor constructor t, values in the codomain)
TRANSFORMED = [
    ("tanh", lambda T, t: [T.TanhTransform()], RNG.uniform(-0.95, 0.95, (4, 3, 2))),
    ("sigmoid_affine", lambda T, t: [T.SigmoidTransform(), T.AffineTransform(2.0, 3.0)], RNG.uniform(2.1, 4.9, (3, 2))),
    ("exp_affine_tensor", lambda T, t: T.ComposeTransform([T.ExpTransform(), T.AffineTransform(t(LOC), t(SCALE))]),
     LOC + SCALE * RNG.uniform(0.5, 2.0, (3, 2))),
    ("inverse_exp", lambda T, t: [T.ExpTransform().inv], RNG.standard_normal((3, 2))),
]


@pytest.mark.parametrize(("name", "transforms", "value"), TRANSFORMED, ids=[c[0] for c in TRANSFORMED])
def test_transformed_distributions_match_torch(torch, name, transforms, value):
    ours, theirs = (
        lib.distributions.TransformedDistribution(
            lib.distributions.Normal(lib.tensor(LOC), lib.tensor(SCALE)),
            transforms(lib.distributions.transforms, lib.tensor),
        )
        for lib in (tensor, torch)
    )
    if name == "inverse_exp":  # the log of a normal variable: defined for positive draws only
        ours._validate_args = theirs._validate_args = False
        value = np.abs(value) + 0.1
    else:
        assert ours.rsample((5,)).shape == (5, 3, 2)
    _close(ours.log_prob(tensor.tensor(value)), theirs.log_prob(torch.tensor(value)), rtol=1e-9)
    assert ours.batch_shape == tuple(theirs.batch_shape)
    inside = np.abs(LOC) + 0.1  # in every transform's domain, the log's too
    for t_ours, t_theirs in zip(ours.transforms, theirs.transforms):
        x = tensor.tensor(inside)
        y = t_ours(x)
        _close(y, t_theirs(torch.tensor(inside)))
        _close(t_ours.inv(y), x, rtol=1e-9)
        theirs_ladj = t_theirs.log_abs_det_jacobian(torch.tensor(inside), torch.tensor(y.numpy()))
        _close(t_ours.log_abs_det_jacobian(x, y), theirs_ladj)


def test_squashed_normal_gradients_and_the_cache():
    D, T = tensor.distributions, tensor.distributions.transforms
    loc, scale = tensor.tensor(LOC[0], requires_grad=True), tensor.tensor(SCALE[0], requires_grad=True)

    def policy(loc, scale):  # a soft actor-critic action and its log-probability
        tensor.manual_seed(5)
        squashed = D.TransformedDistribution(D.Normal(loc, scale), [T.TanhTransform(cache_size=1)])
        action = squashed.rsample()
        return action, squashed.log_prob(action)

    assert gradcheck(policy, (loc, scale))
    cached = T.TanhTransform(cache_size=1)
    x = tensor.tensor([30.0])
    assert cached.inv(cached(x)).item() == 30.0  # the exact input, where atanh(tanh(30)) is not
    assert T.TanhTransform().inv(T.TanhTransform()(x)).item() == float("inf")  # atanh(1), as torch
    with pytest.raises(ValueError, match="cache_size"):
        T.TanhTransform(cache_size=2)
    with pytest.raises(ValueError, match="within the support"):
        D.TransformedDistribution(D.Normal(0.0, 1.0), T.TanhTransform()).log_prob(tensor.tensor(1.5))
    assert type(D.LogNormal(0.0, 1.0).expand((2,))) is D.LogNormal


def test_the_default_validation_can_be_switched_off_as_in_torch(torch):
    for lib in (tensor, torch):
        D = lib.distributions
        D.Distribution.set_default_validate_args(False)
        try:
            D.Normal(lib.zeros(1), -lib.ones(1))  # unchecked
        finally:
            D.Distribution.set_default_validate_args(True)
        with pytest.raises(ValueError, match="Expected parameter scale"):
            D.Normal(lib.zeros(1), -lib.ones(1))
    with pytest.raises(ValueError, match="expects a bool"):
        tensor.distributions.Distribution.set_default_validate_args("yes")


def test_gamma_family_samples_follow_their_distributions():
    D = tensor.distributions
    tensor.manual_seed(6)
    for dist, mean, var in (
        (D.Gamma(tensor.tensor(CONC), tensor.tensor(GAMMA_RATE)), CONC / GAMMA_RATE, CONC / GAMMA_RATE**2),
        (D.Chi2(tensor.tensor(CONC * 3)), CONC * 3, CONC * 6),
        (D.Beta(tensor.tensor(CONC), tensor.tensor(GAMMA_RATE)), CONC / (CONC + GAMMA_RATE),
         CONC * GAMMA_RATE / ((CONC + GAMMA_RATE) ** 2 * (CONC + GAMMA_RATE + 1))),
        (D.StudentT(tensor.tensor([4.0, 9.0]), 1.0, 2.0), np.ones(2), 4.0 * np.array([4 / 2, 9 / 7])),
    ):
        draws = dist.sample((60000,)).numpy()
        np.testing.assert_allclose(draws.mean(0), mean, rtol=0.04, atol=0.02)
        np.testing.assert_allclose(draws.var(0), var, rtol=0.12)
    simplex = D.Dirichlet(tensor.tensor(DIRICHLET)).sample((40000,)).numpy()
    np.testing.assert_allclose(simplex.sum(-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(simplex.mean(0), DIRICHLET / DIRICHLET.sum(-1, keepdims=True), atol=0.01)
    tiny = D.Gamma(tensor.tensor([1e-3]), 1.0).sample((1000,))  # underflows, held at the smallest normal
    assert (tiny > 0).all()


def test_standard_gamma_gradient_is_the_implicit_one(torch):
    """dx/da against -(dP/da)/(dP/dx) by float64 differences of igamma, over both series' ranges,
    and against torch's approximation (within its ~1e-3)."""
    a = np.array([0.01, 0.1, 0.5, 1.0, 2.5, 10.0, 100.0, 0.3, 5.0, 3.0, 1000.0])
    x = np.array([1e-30, 1e-3, 0.2, 1.5, 5.0, 9.0, 120.0, 2.0, 1.0, 3.999, 990.0])
    ours = tensor._standard_gamma_grad(tensor.tensor(a), tensor.tensor(x)).numpy()
    step = 1e-6 * a
    dp_da = (tensor.igamma(tensor.tensor(a + step), tensor.tensor(x))
             - tensor.igamma(tensor.tensor(a - step), tensor.tensor(x))).numpy() / (2 * step)
    density = np.exp((a - 1) * np.log(x) - x - tensor.lgamma(tensor.tensor(a)).numpy())
    np.testing.assert_allclose(ours, -dp_da / density, rtol=1e-6)
    np.testing.assert_allclose(ours, torch._standard_gamma_grad(torch.tensor(a), torch.tensor(x)).numpy(), rtol=2e-3)
    assert np.isnan(tensor._standard_gamma_grad(tensor.tensor([0.0, -1.0]), tensor.tensor([1.0, 1.0])).numpy()).all()
    concentration = tensor.tensor([0.5, 2.0], requires_grad=True)
    sample = tensor._standard_gamma(concentration)
    sample.sum().backward()
    expected = tensor._standard_gamma_grad(concentration.detach(), sample.detach())
    assert concentration.grad.tolist() == expected.tolist()
    with pytest.raises(NotImplementedError):
        tensor._standard_gamma(tensor.tensor([1, 2]))


def test_gamma_family_reparameterised_gradients():
    """A rejection sampler's draw is not the quantile of its seed's uniform, so the gradients in
    the concentrations are checked in expectation: the mean of many samples' gradients against
    the gradient of the closed-form mean (or second moment). The rest by gradcheck on a fixed draw."""
    D = tensor.distributions
    count = 200000
    c1, c0 = tensor.tensor([1.5, 0.4], requires_grad=True), tensor.tensor([0.7, 2.0], requires_grad=True)
    df = tensor.tensor([10.0], requires_grad=True)
    tensor.manual_seed(8)
    (D.Gamma(c1, 2.0).rsample((count,)).mean(0).sum() + D.Beta(c1, c0).rsample((count,)).mean(0).sum()
     + D.StudentT(df).rsample((count,)).pow(2).mean()).backward()
    a, b = c1.detach().numpy(), c0.detach().numpy()
    np.testing.assert_allclose(c1.grad.numpy(), 1 / 2.0 + b / (a + b) ** 2, rtol=0.03)
    np.testing.assert_allclose(c0.grad.numpy(), -a / (a + b) ** 2, rtol=0.03)
    np.testing.assert_allclose(df.grad.numpy(), [-2 / (10.0 - 2) ** 2], rtol=0.1)
    alpha = tensor.tensor([2.0, 0.5, 1.0], requires_grad=True)
    D.Dirichlet(alpha).rsample((count,))[:, 0].mean().backward()
    np.testing.assert_allclose(alpha.grad.numpy(), [1.5 / 3.5**2, -2 / 3.5**2, -2 / 3.5**2], rtol=0.05)

    conc = tensor.tensor(CONC[0])
    rate, loc = tensor.tensor(GAMMA_RATE[0], requires_grad=True), tensor.tensor(LOC[0], requires_grad=True)

    def draws(rate, loc):
        tensor.manual_seed(7)
        return D.Gamma(conc, rate).rsample((3,)), D.StudentT(tensor.tensor([3.0, 7.0]), loc, rate).rsample()

    assert gradcheck(draws, (rate, loc))
    value = tensor.tensor(GAMMA_RNG.uniform(0.1, 0.9, 2))
    conc = conc.requires_grad_()
    assert gradcheck(lambda c, r: (D.Gamma(c, r).log_prob(value), D.Beta(c, r).entropy()), (conc, rate))


def test_gamma_family_validation_and_expand(torch):
    for lib in (tensor, torch):
        D = lib.distributions
        with pytest.raises(ValueError, match="Expected parameter concentration"):
            D.Gamma(-lib.ones(2), 1.0)
        with pytest.raises(ValueError, match="within the support"):
            D.Beta(lib.ones(1), lib.ones(1)).log_prob(lib.tensor([1.5]))
        with pytest.raises(ValueError, match="within the support"):
            D.Dirichlet(lib.ones(3)).log_prob(lib.tensor([0.5, 0.6, 0.1]))
        with pytest.raises(ValueError, match="at least one-dimensional"):
            D.Dirichlet(lib.tensor(1.0))
        chi2 = D.Chi2(lib.tensor([2.0, 3.0])).expand((4, 2))
        assert type(chi2) is D.Chi2 and tuple(chi2.sample().shape) == (4, 2) and chi2.df.tolist()[0] == [2.0, 3.0]
        assert tuple(D.Dirichlet(lib.ones(2, 3)).expand((5, 2)).sample().shape) == (5, 2, 3)
        assert tuple(D.StudentT(lib.ones(2)).expand((3, 2)).rsample().shape) == (3, 2)


def test_counts_and_heavy_tails_sample_their_distributions():
    D = tensor.distributions
    tensor.manual_seed(9)
    probs = DIRICHLET / DIRICHLET.sum(-1, keepdims=True)
    for dist, mean in ((D.Geometric(tensor.tensor(PROBS)), 1 / PROBS - 1),
                       (D.Binomial(10, tensor.tensor(PROBS)), 10 * PROBS),
                       (D.Multinomial(6, tensor.tensor(probs)), 6 * probs),
                       (D.HalfNormal(tensor.tensor(SCALE)), SCALE * np.sqrt(2 / np.pi))):
        draws = dist.sample((40000,)).numpy()
        np.testing.assert_allclose(draws.mean(0), mean, rtol=0.04, atol=0.01)
    counts = D.Multinomial(6, tensor.tensor(probs)).sample((10,)).numpy()
    assert (counts.sum(-1) == 6).all()
    gumbel = D.Gumbel(tensor.tensor(LOC), tensor.tensor(SCALE)).sample((40000,)).numpy()
    np.testing.assert_allclose(np.median(gumbel, 0), LOC - SCALE * np.log(np.log(2)), atol=0.05)
    cauchy = D.Cauchy(tensor.tensor(LOC), tensor.tensor(SCALE)).sample((40000,)).numpy()
    np.testing.assert_allclose(np.median(cauchy, 0), LOC, atol=0.05)
    mixture = D.MixtureSameFamily(D.Categorical(tensor.tensor([0.25, 0.75])), D.Normal(tensor.tensor([-5.0, 5.0]), 0.5))
    np.testing.assert_allclose((mixture.sample((40000,)).numpy() > 0).mean(), 0.75, atol=0.01)


def test_counts_and_mixtures_raise_as_torch(torch):
    for lib in (tensor, torch):
        D = lib.distributions
        with pytest.raises(ValueError, match="Expected parameter probs"):
            D.Geometric(lib.tensor([0.0, 0.5]))
        with pytest.raises(ValueError, match="within the support"):
            D.Binomial(3, lib.tensor([0.5])).log_prob(lib.tensor([4.0]))
        with pytest.raises(ValueError, match="within the support"):
            D.Multinomial(2, lib.tensor([0.5, 0.5])).log_prob(lib.tensor([2.0, 1.0]))
        with pytest.raises(NotImplementedError, match="inhomogeneous"):
            D.Multinomial(2.5, lib.tensor([0.5, 0.5]))
        with pytest.raises(NotImplementedError, match="Inhomogeneous"):
            D.Binomial(lib.tensor([2.0, 3.0]), lib.tensor([0.5, 0.5])).entropy()
        with pytest.raises(ValueError, match="Categorical"):
            D.MixtureSameFamily(D.Normal(0.0, 1.0), D.Normal(lib.zeros(2), 1.0))
        with pytest.raises(ValueError, match="does not equal"):
            D.MixtureSameFamily(D.Categorical(lib.ones(3)), D.Normal(lib.zeros(2), 1.0))
        with pytest.raises(ValueError, match="within the support"):
            D.HalfNormal(lib.ones(2)).log_prob(lib.tensor([-1.0, 1.0]))
        assert D.Binomial(4, lib.tensor([0.3, 0.6])).enumerate_support().shape == (5, 2)
        assert tuple(D.MixtureSameFamily(D.Categorical(lib.ones(3)), D.Normal(lib.zeros(3), 1.0)).expand((4,))
                     .sample().shape) == (4,)


def test_parameters_exposed_as_properties_are_validated(torch):
    for lib in (tensor, torch):
        D = lib.distributions
        for df in (-1.0, 0.0, float("nan")):
            with pytest.raises(ValueError, match="Expected parameter df"):
                D.Chi2(lib.tensor([df]))

        class Scaled(D.Distribution):
            arg_constraints = {"width": D.constraints.positive}

            def __init__(self, half):
                self.half = half
                super().__init__(half.shape)

            @property
            def width(self):
                return 2 * self.half

        with pytest.raises(ValueError, match="Expected parameter width"):
            Scaled(-lib.ones(2))
        with pytest.raises(ValueError, match="total_count"):
            D.Multinomial(-1, lib.tensor([0.5, 0.5]))


def test_shapes_supports_and_modes_match_torch(torch):
    results = []
    for lib in (tensor, torch):
        D = lib.distributions
        ind = D.Independent(D.Normal(lib.zeros(2, 3), 1.0), 1)
        mvn = D.MultivariateNormal(lib.zeros(2), lib.eye(2)).expand((3,))
        with pytest.raises(ValueError, match="support"):
            mvn.log_prob(lib.tensor([float("nan"), 0.0]))
        results.append([
            ind.support.event_dim, tuple(ind.support.check(lib.zeros(2, 3)).shape),
            D.Normal(lib.zeros(3), 1.0).batch_shape.numel(), D.Bernoulli(lib.tensor([0.3])).param_shape.numel(),
            D.Dirichlet(lib.tensor([1.0, 1.0, 1.0])).mode.tolist(),
            D.Dirichlet(lib.tensor([0.5, 0.5, 1.0])).mode.tolist(),
            D.Beta(lib.tensor([1.0, 2.0, 0.5]), lib.tensor([1.0, 3.0, 0.5])).mode.tolist(),
            D.Uniform(lib.tensor([0.0]), lib.tensor([1.0])).log_prob(lib.tensor([1.0])).tolist(),
            D.Gumbel(lib.tensor(0.5), lib.tensor(2.0)).icdf(lib.tensor([0.0, 1.0])).tolist(),
            lib.distributions.constraints.positive_definite.check(lib.zeros(2, 3)).tolist(),
            D.Independent(D.Bernoulli(lib.full((2, 3), 0.5)), 0).has_enumerate_support,
            tuple(D.Independent(D.Bernoulli(lib.full((2, 3), 0.5)), 0).enumerate_support().shape),
        ])
        assert type(D.Normal(lib.zeros(3), 1.0).batch_shape).__name__ == "Size"
        for dist in (D.Gamma(lib.tensor(1.0), lib.tensor(1.0)), D.Poisson(lib.ones(2)),
                     D.Independent(D.Bernoulli(lib.full((2, 3), 0.5)), 1)):
            with pytest.raises(NotImplementedError):
                dist.enumerate_support()
    ours, theirs = results
    np.testing.assert_allclose(np.array(ours[8]), np.array(theirs[8]), rtol=1e-6)  # float32 logs
    assert str(ours[:8] + ours[9:]) == str(theirs[:8] + theirs[9:])  # NaNs compared as text


def test_uniform_mode_is_differentiable():
    high = tensor.tensor([1.0, 2.0], requires_grad=True)
    mode = tensor.distributions.Uniform(tensor.zeros(2), high).mode
    mode.sum().backward()
    assert np.isnan(mode.tolist()).all() and high.grad is not None


# Functions of logits built on softplus, whose derivative must be sigmoid (0.5 at a logit of 0)
SOFTPLUS_USERS = {
    "bernoulli_log_prob": lambda D, t, x: D.Bernoulli(logits=x).log_prob(t([1.0, 0.0, 1.0, 0.0])),
    "bernoulli_entropy": lambda D, t, x: D.Bernoulli(logits=x).entropy(),
    "geometric_entropy": lambda D, t, x: D.Geometric(logits=x).entropy(),
    "geometric_log_prob": lambda D, t, x: D.Geometric(logits=x).log_prob(t([2.0, 0.0, 1.0, 3.0])),
    "bernoulli_kl": lambda D, t, x: D.kl_divergence(D.Bernoulli(logits=x), D.Bernoulli(logits=t([0.5] * 4))),
    "sigmoid_log_det": lambda D, t, x: D.transforms.SigmoidTransform().log_abs_det_jacobian(x, x.sigmoid()),
}


@pytest.mark.parametrize("name", sorted(SOFTPLUS_USERS))
def test_softplus_based_gradients_match_torch_at_zero_logits(torch, name):
    grads = []
    for lib in (tensor, torch):
        x = lib.tensor([0.0, 0.0, 3.0, -3.0], dtype=lib.float64, requires_grad=True)
        SOFTPLUS_USERS[name](lib.distributions, lambda v, lib=lib: lib.tensor(v, dtype=lib.float64), x).sum().backward()
        grads.append(x.grad.tolist())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-12)
