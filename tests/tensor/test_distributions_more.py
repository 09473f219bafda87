"""``VonMises``, ``Weibull``, ``LowRankMultivariateNormal``, ``Wishart`` and ``LKJCholesky``, the
matrix transforms and constraints, and the low-rank KL pairs (tensor/distributions/) against torch's:
values of densities and moments, shapes, validation errors, sample statistics with fixed seeds, and
gradients through ``rsample`` and ``log_prob`` by float64 finite differences."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tensor
from autograd import gradcheck

RNG = np.random.default_rng(41)
ANGLE = RNG.standard_normal((3, 2))
KAPPA = np.array([[0.01, 0.5], [3.0, 3.75], [10.0, 200.0]])  # both sides of the Bessel forms' 3.75
WEIBULL_SCALE, WEIBULL_K = RNG.uniform(0.5, 2.0, (3, 2)), np.array([[0.5, 1.0], [0.7, 1.5], [2.0, 4.0]])
LR_LOC, LR_FACTOR, LR_DIAG = RNG.standard_normal((3, 1, 4)), RNG.standard_normal((2, 4, 2)), RNG.uniform(0.5, 2, 4)
_A = RNG.standard_normal((2, 3, 3))
COV = _A @ _A.transpose(0, 2, 1) + np.eye(3)
DF = np.array([4.5, 7.0])
_X = RNG.standard_normal((4, 6, 3))
SPD = (_X.transpose(0, 2, 1) @ _X / 6 + 0.1 * np.eye(3))[:, None]  # (4, 1, 3, 3): broadcast over DF's batch
LKJ_CONC = np.array([0.5, 2.5])


def _lkj_values(dim: int, count: int) -> np.ndarray:
    """Cholesky factors of random correlation matrices."""
    x = RNG.standard_normal((count, dim, dim + 2))
    corr = x @ x.transpose(0, 2, 1)
    scale = 1 / np.sqrt(np.diagonal(corr, axis1=1, axis2=2))
    return np.linalg.cholesky(corr * scale[:, :, None] * scale[:, None, :])


# (name, make(m, t) over a library m and its tensor constructor t, a value in the support)
CASES = [
    ("von_mises", lambda m, t: m.distributions.VonMises(t(ANGLE), t(KAPPA)), 3 * RNG.standard_normal((4, 3, 2))),
    ("von_mises_broadcast", lambda m, t: m.distributions.VonMises(t(ANGLE[0]), 2.0), RNG.standard_normal((3, 2))),
    ("weibull", lambda m, t: m.distributions.Weibull(t(WEIBULL_SCALE), t(WEIBULL_K + 0.6)),
     RNG.uniform(0.1, 3, (3, 2))),
    ("lowrank", lambda m, t: m.distributions.LowRankMultivariateNormal(t(LR_LOC), t(LR_FACTOR), t(LR_DIAG)),
     RNG.standard_normal((5, 3, 2, 4))),
    ("wishart_covariance", lambda m, t: m.distributions.Wishart(t(DF), covariance_matrix=t(COV)), SPD),
    ("wishart_precision", lambda m, t: m.distributions.Wishart(t(DF), precision_matrix=t(COV)), SPD),
    ("wishart_scale_tril", lambda m, t: m.distributions.Wishart(t(DF), scale_tril=t(np.linalg.cholesky(COV))), SPD),
    ("wishart_number_df", lambda m, t: m.distributions.Wishart(3.5, covariance_matrix=t(COV[0])), SPD[:, 0]),
    ("lkj", lambda m, t: m.distributions.LKJCholesky(4, t(LKJ_CONC)), _lkj_values(4, 6).reshape(3, 2, 4, 4)),
    ("lkj_default", lambda m, t: m.distributions.LKJCholesky(2), _lkj_values(2, 5)),
]
LKJ3 = _lkj_values(3, 4)[:, None]  # (4, 1, 3, 3), against LKJ_CONC's batch of 2


def _close(ours, theirs, rtol=1e-10):
    np.testing.assert_allclose(np.asarray(ours.tolist(), dtype=float), np.asarray(theirs.tolist(), dtype=float),
                               rtol=rtol, atol=1e-12)


def _quietly(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's Wishart warns of singular samples it has not drawn
        return fn(*args)


def _both(torch, make):
    return _quietly(make, tensor, tensor.tensor), _quietly(make, torch, torch.tensor)


def _part(dist, part):
    return dist.entropy() if part == "entropy" else getattr(dist, part)


@pytest.mark.parametrize(("name", "make", "value"), CASES, ids=[c[0] for c in CASES])
def test_values_shapes_and_expand_match_torch(torch, name, make, value):
    ours, theirs = _both(torch, make)
    assert (ours.batch_shape, ours.event_shape) == (tuple(theirs.batch_shape), tuple(theirs.event_shape))
    assert ours.has_rsample == theirs.has_rsample
    assert repr(ours.support) == repr(theirs.support)
    assert {k: repr(c) for k, c in ours.arg_constraints.items()} == {
        k: repr(c) for k, c in theirs.arg_constraints.items()}
    _close(ours.log_prob(tensor.tensor(value)), theirs.log_prob(torch.tensor(value)))
    for part in ("mean", "mode", "variance", "entropy"):
        try:
            expected = _part(theirs, part)
        except NotImplementedError:  # a VonMises' entropy, an LKJCholesky's moments: neither has them
            with pytest.raises(NotImplementedError):
                _part(ours, part)
            continue
        _close(_part(ours, part), expected)
    for shape in ((), (4,), (2, 3)):
        drawn, expected = ours.sample(shape), _quietly(theirs.sample, shape)
        assert drawn.shape == tuple(expected.shape)
        assert str(drawn.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    batch = tuple(np.broadcast_shapes(value.shape[:value.ndim - len(ours.event_shape)], ours.batch_shape))
    wide, wide_theirs = ours.expand(batch), theirs.expand(batch)
    assert type(wide) is type(ours) and wide.batch_shape == batch and wide._validate_args
    assert wide.sample().shape == tuple(_quietly(wide_theirs.sample).shape)
    _close(wide.log_prob(tensor.tensor(value)), wide_theirs.log_prob(torch.tensor(value)))


def test_weibull_mode_is_zero_where_the_density_peaks_at_zero(torch):
    ours = tensor.distributions.Weibull(tensor.tensor(WEIBULL_SCALE), tensor.tensor(WEIBULL_K)).mode.numpy()
    theirs = torch.distributions.Weibull(torch.tensor(WEIBULL_SCALE), torch.tensor(WEIBULL_K)).mode.numpy()
    peaked = WEIBULL_K >= 1  # where torch's formula holds: 0 at k = 1
    np.testing.assert_allclose(ours[peaked], theirs[peaked], rtol=1e-12)
    np.testing.assert_array_equal(ours[~peaked], 0.0)  # torch's: scale at k = 1/2 ((-1)^2), NaN at k = 0.7
    assert np.isnan(theirs[1, 0]) and theirs[0, 0] == WEIBULL_SCALE[0, 0]


@pytest.mark.parametrize("name", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_matrix_properties_match_torch(torch, name):
    for make in (lambda m, t: m.distributions.LowRankMultivariateNormal(t(LR_LOC), t(LR_FACTOR), t(LR_DIAG)),
                 lambda m, t: m.distributions.Wishart(t(DF), covariance_matrix=t(COV)),
                 lambda m, t: m.distributions.Wishart(t(DF), precision_matrix=t(COV))):
        ours, theirs = _both(torch, make)
        _close(getattr(ours, name), getattr(theirs, name), rtol=1e-9)


# (p, q) over a library's distributions D and tensor constructor t
LR_Q = (RNG.standard_normal(4), RNG.standard_normal((3, 1, 4, 3)), RNG.uniform(0.5, 2, 4))
_B = RNG.standard_normal((2, 4, 4))
MVN_COV = _B @ _B.transpose(0, 2, 1) + np.eye(4)
KL_PAIRS = {
    "lowrank_lowrank": lambda D, t: (D.LowRankMultivariateNormal(t(LR_LOC), t(LR_FACTOR), t(LR_DIAG)),
                                     D.LowRankMultivariateNormal(*map(t, LR_Q))),
    "mvn_lowrank": lambda D, t: (D.MultivariateNormal(t(LR_LOC), covariance_matrix=t(MVN_COV)),
                                 D.LowRankMultivariateNormal(*map(t, LR_Q))),
    "lowrank_mvn": lambda D, t: (D.LowRankMultivariateNormal(*map(t, LR_Q)),
                                 D.MultivariateNormal(t(LR_LOC), scale_tril=t(np.linalg.cholesky(MVN_COV)))),
}


@pytest.mark.parametrize("name", sorted(KL_PAIRS))
def test_lowrank_kl_divergences_match_torch(torch, name):
    p, q = KL_PAIRS[name](tensor.distributions, tensor.tensor)
    tp, tq = KL_PAIRS[name](torch.distributions, torch.tensor)
    _close(tensor.distributions.kl_divergence(p, q), torch.distributions.kl_divergence(tp, tq), rtol=1e-9)
    _close(tensor.distributions.kl_divergence(q, p), torch.distributions.kl_divergence(tq, tp), rtol=1e-9)


def test_lowrank_to_mvn_kl_broadcasts_a_batched_cov_diag():
    """torch's form fails to expand when only ``cov_diag`` has batch dims; the value is the dense KL."""
    D = tensor.distributions
    diag = RNG.uniform(0.5, 2, (3, 1, 4))
    p = D.LowRankMultivariateNormal(tensor.zeros(4, dtype=tensor.float64), tensor.tensor(LR_Q[1][0, 0]),
                                    tensor.tensor(diag))
    q = D.MultivariateNormal(tensor.tensor(LR_LOC[0, 0]), covariance_matrix=tensor.tensor(MVN_COV))
    dense = D.MultivariateNormal(p.loc, covariance_matrix=p.covariance_matrix)
    _close(D.kl_divergence(p, q), D.kl_divergence(dense, q), rtol=1e-9)
    with pytest.raises(ValueError, match="different event shapes"):
        D.kl_divergence(p, D.MultivariateNormal(tensor.zeros(3), tensor.eye(3)))


def test_matrix_transforms_and_constraints_match_torch(torch):
    x, v = RNG.standard_normal((2, 3, 3)), RNG.standard_normal((2, 6))
    outs = []
    for lib in (tensor, torch):
        D = lib.distributions
        T, C = D.transforms, D.constraints
        lower, definite, corr = T.LowerCholeskyTransform(), T.PositiveDefiniteTransform(), T.CorrCholeskyTransform()
        matrices, vectors = lib.tensor(x), lib.tensor(v)
        y = corr(vectors)
        assert D.LowerCholeskyTransform is T.LowerCholeskyTransform and lower == T.LowerCholeskyTransform()
        assert tuple(corr.forward_shape((5, 6))) == (5, 4, 4) and tuple(corr.inverse_shape((5, 4, 4))) == (5, 6)
        assert (corr.domain.event_dim, corr.codomain.event_dim) == (1, 2)
        outs.append([
            lower(matrices), lower.inv(lower(matrices)), definite(matrices), definite.inv(definite(matrices)), y,
            corr.inv(y), corr.log_abs_det_jacobian(vectors, y), C.corr_cholesky.check(y),
            C.corr_cholesky.check(lower(matrices)), C.lower_cholesky.check(matrices),
            C.positive_definite.check(definite(matrices)),
            C.positive_semidefinite.check(lib.stack([definite(matrices)[0], (matrices + matrices.mT)[1]])),
            D.transform_to(C.lower_cholesky)(matrices), D.transform_to(C.positive_definite)(matrices),
            D.transform_to(C.positive_semidefinite)(matrices), D.biject_to(C.corr_cholesky)(vectors),
            D.transform_to(C.corr_cholesky).inv(y),
        ])
        for constraint in (C.lower_cholesky, C.positive_definite, C.positive_semidefinite):
            with pytest.raises(NotImplementedError):
                D.biject_to(constraint)
        with pytest.raises(ValueError, match="flattened lower-diagonal"):
            corr.forward_shape((5,))
        with pytest.raises(ValueError, match="not square"):
            corr.inverse_shape((3, 4))
    for ours, theirs in zip(*outs):
        _close(ours, theirs, rtol=1e-9)


def test_corr_cholesky_log_det_is_that_of_the_strict_lower_triangle():
    """The log-determinant of d(strict lower triangle of y)/dx, by float64 central differences."""
    corr = tensor.distributions.transforms.CorrCholeskyTransform()
    x = RNG.standard_normal(6)
    rows, cols = np.tril_indices(4, -1)

    def lower(v):
        return corr(tensor.tensor(v)).numpy()[rows, cols]

    step = 1e-6
    jacobian = np.stack([(lower(x + step * e) - lower(x - step * e)) / (2 * step) for e in np.eye(6)], -1)
    expected = np.linalg.slogdet(jacobian)[1]
    value = tensor.tensor(x)
    assert abs(corr.log_abs_det_jacobian(value, corr(value)).item() - expected) < 1e-7


def test_validation_errors_are_torchs(torch):
    for lib in (tensor, torch):
        D = lib.distributions
        with pytest.raises(ValueError, match="Expected parameter concentration"):
            D.VonMises(lib.zeros(2), -lib.ones(2))
        with pytest.raises(ValueError, match="Expected parameter scale"):
            D.Weibull(-lib.ones(2), 1.0)
        with pytest.raises(ValueError, match="within the support"):
            D.Weibull(lib.ones(2), 1.0).log_prob(-lib.ones(2))
        with pytest.raises(ValueError, match="loc must be at least one-dimensional"):
            D.LowRankMultivariateNormal(lib.tensor(0.0), lib.ones(2, 1), lib.ones(2))
        with pytest.raises(ValueError, match="cov_factor must be at least two-dimensional"):
            D.LowRankMultivariateNormal(lib.zeros(2), lib.ones(2), lib.ones(2))
        with pytest.raises(ValueError, match="cov_factor must be a batch of matrices with shape 2 x m"):
            D.LowRankMultivariateNormal(lib.zeros(2), lib.ones(3, 1), lib.ones(2))
        with pytest.raises(ValueError, match="cov_diag must be a batch of vectors"):
            D.LowRankMultivariateNormal(lib.zeros(2), lib.ones(2, 1), lib.ones(3))
        with pytest.raises(ValueError, match="Incompatible batch shapes"):
            D.LowRankMultivariateNormal(lib.zeros(3, 2), lib.ones(4, 2, 1), lib.ones(2))
        with pytest.raises(ValueError, match="Expected parameter cov_diag"):
            D.LowRankMultivariateNormal(lib.zeros(2), lib.zeros(2, 1), -lib.ones(2))
        with pytest.raises(AssertionError, match="Exactly one of covariance_matrix"):
            D.Wishart(lib.tensor(3.0), covariance_matrix=lib.eye(2), scale_tril=lib.eye(2))
        with pytest.raises(ValueError, match="expected to be greater than ndim - 1 = 1"):
            D.Wishart(lib.tensor(0.5), covariance_matrix=lib.eye(2))
        with pytest.raises(ValueError, match="at least two-dimensional"):
            D.Wishart(lib.tensor(3.0), covariance_matrix=lib.ones(2))
        with pytest.raises(ValueError, match="Expected parameter covariance_matrix"):
            D.Wishart(lib.tensor(3.0), covariance_matrix=lib.tensor([[1.0, 2.0], [2.0, 1.0]]))
        with pytest.raises(ValueError, match="Expected parameter scale_tril"):
            D.Wishart(lib.tensor(3.0), scale_tril=lib.tensor([[1.0, 2.0], [0.0, 1.0]]))
        with pytest.raises(ValueError, match="within the support"):
            D.Wishart(lib.tensor(3.0), covariance_matrix=lib.eye(2)).log_prob(lib.tensor([[1.0, 2.0], [2.0, 1.0]]))
        with pytest.warns(UserWarning, match="Low df values detected"):
            D.Wishart(lib.tensor(1.5), covariance_matrix=lib.eye(2))
        with pytest.raises(ValueError, match="Expected dim to be an integer greater than or equal to 2"):
            D.LKJCholesky(1)
        with pytest.raises(ValueError, match="Expected parameter concentration"):
            D.LKJCholesky(3, lib.tensor([1.0, -1.0]))
        with pytest.raises(ValueError, match="within the support"):
            D.LKJCholesky(2).log_prob(2 * lib.eye(2))
        D.VonMises(0.0, -1.0, validate_args=False)  # unchecked when asked


def test_von_mises_and_weibull_samples_follow_their_distributions():
    D = tensor.distributions
    tensor.manual_seed(1)
    loc, kappa = tensor.tensor([3.0, -1.0, 0.5]), tensor.tensor([0.5, 2.0, 30.0])
    von_mises = D.VonMises(loc, kappa)
    angles = von_mises.sample((40000,)).numpy()
    assert (angles >= -np.pi).all() and (angles < np.pi).all()
    offset = angles - loc.numpy()
    mean_resultant = 1 - von_mises.variance.numpy()  # E cos(x - loc) = I1(k) / I0(k)
    np.testing.assert_allclose(np.cos(offset).mean(0), mean_resultant, atol=0.015)
    np.testing.assert_allclose(np.sin(offset).mean(0), 0.0, atol=0.015)
    assert D.VonMises(tensor.tensor([0.0], dtype=tensor.float32), 1e-6).sample((3,)).dtype == tensor.float32
    weibull = D.Weibull(tensor.tensor(WEIBULL_SCALE), tensor.tensor(WEIBULL_K + 0.6))
    draws = weibull.sample((40000,)).numpy()
    np.testing.assert_allclose(draws.mean(0), weibull.mean.numpy(), rtol=0.03)
    np.testing.assert_allclose(draws.var(0), weibull.variance.numpy(), rtol=0.12)


def test_lowrank_and_wishart_samples_follow_their_distributions():
    D = tensor.distributions
    tensor.manual_seed(2)
    lowrank = D.LowRankMultivariateNormal(tensor.tensor(LR_LOC[0, 0]), tensor.tensor(LR_FACTOR[0]),
                                          tensor.tensor(LR_DIAG))
    vectors = lowrank.sample((40000,)).numpy()
    cov = lowrank.covariance_matrix.numpy()
    np.testing.assert_allclose(vectors.mean(0), LR_LOC[0, 0], atol=0.05)
    np.testing.assert_allclose(np.cov(vectors.T), cov, atol=0.08 * np.abs(cov).max())
    wishart = D.Wishart(tensor.tensor(DF), covariance_matrix=tensor.tensor(COV))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "Singular sample detected." for draws that are not
        matrices = wishart.sample((20000,)).numpy()
    scale = np.abs(wishart.mean.numpy()).max(axis=(-2, -1), keepdims=True)
    np.testing.assert_allclose(matrices.mean(0), wishart.mean.numpy(), atol=0.04 * scale.max())
    np.testing.assert_allclose(matrices.var(0), wishart.variance.numpy(), rtol=0.15, atol=0.02 * scale.max() ** 2)


@pytest.mark.parametrize(("dim", "concentration"), [(2, 1.0), (3, 1.0), (4, 2.5)])
def test_lkj_correlations_have_the_lkj_marginals(dim, concentration):
    """Every correlation of LKJ(eta) in dimension d is 2 Beta(b, b) - 1 with b = eta - 1 + d / 2: mean 0,
    variance 1 / (2 eta + d - 1). torch's draws fail this from d = 3 on (0.30 for d = 3, eta = 1)."""
    D = tensor.distributions
    tensor.manual_seed(3)
    factors = D.LKJCholesky(dim, concentration).sample((40000,))
    assert D.constraints.corr_cholesky.check(factors).all()
    corr = (factors @ factors.mT).numpy()
    rows, cols = np.tril_indices(dim, -1)
    off_diagonal = corr[:, rows, cols]
    np.testing.assert_allclose(off_diagonal.mean(0), 0.0, atol=0.015)
    np.testing.assert_allclose(off_diagonal.var(0), 1 / (2 * concentration + dim - 1), atol=0.012)


def test_lkj_density_of_a_two_by_two_factor_integrates_to_one():
    r = np.linspace(-1, 1, 20001)[1:-1]
    factors = np.zeros((r.size, 2, 2))
    factors[:, 0, 0], factors[:, 1, 0], factors[:, 1, 1] = 1.0, r, np.sqrt(1 - r**2)
    density = tensor.distributions.LKJCholesky(2, 3.0).log_prob(tensor.tensor(factors)).exp().numpy()
    assert abs(density.sum() * (r[1] - r[0]) - 1) < 1e-3


def test_rsample_and_log_prob_gradients():
    D = tensor.distributions
    loc = tensor.tensor(ANGLE[0], requires_grad=True)
    kappa = tensor.tensor([1.5, 6.0], dtype=tensor.float64, requires_grad=True)
    angles = tensor.tensor(RNG.standard_normal((3, 2)))
    assert gradcheck(lambda loc, kappa: (D.VonMises(loc, kappa).log_prob(angles), D.VonMises(loc, kappa).variance),
                     (loc, kappa))
    scale, k = tensor.tensor(WEIBULL_SCALE[0], requires_grad=True), tensor.tensor(WEIBULL_K[2], requires_grad=True)
    positive = tensor.tensor(RNG.uniform(0.2, 2.0, (3, 2)))

    def weibull(scale, k):
        tensor.manual_seed(4)
        dist = D.Weibull(scale, k)
        return dist.rsample((3,)), dist.log_prob(positive), dist.entropy(), dist.mean, dist.variance

    assert gradcheck(weibull, (scale, k))
    lr = [tensor.tensor(a, requires_grad=True) for a in (LR_LOC[0, 0], LR_FACTOR[0], LR_DIAG)]
    vectors = tensor.tensor(RNG.standard_normal((5, 4)))

    def lowrank(loc, factor, diag):
        tensor.manual_seed(5)
        dist = D.LowRankMultivariateNormal(loc, factor, diag)
        return dist.rsample((2,)), dist.log_prob(vectors), dist.entropy(), dist.precision_matrix, dist.scale_tril

    assert gradcheck(lowrank, tuple(lr))


def test_wishart_and_lkj_gradients_match_torch(torch):
    """log_prob and entropy in the degrees of freedom, scale factor and concentration against torch's
    autograd; Bartlett rsample in the scale factor by finite differences."""
    tril = np.linalg.cholesky(COV[0])
    grads = []
    for lib in (tensor, torch):
        df = lib.tensor(DF, requires_grad=True)
        factor = lib.tensor(tril, requires_grad=True)
        conc = lib.tensor(LKJ_CONC, requires_grad=True)
        wishart = lib.distributions.Wishart(df, scale_tril=factor)
        lkj = lib.distributions.LKJCholesky(3, conc)
        total = (wishart.log_prob(lib.tensor(SPD)).sum() + wishart.entropy().sum()
                 + lkj.log_prob(lib.tensor(LKJ3)).sum())
        total.backward()
        # torch's cholesky_solve gives the factor's upper triangle a gradient though it never reads it
        grads.append([df.grad, factor.grad.tril(), conc.grad])
    for ours, theirs in zip(*grads):
        _close(ours, theirs, rtol=1e-9)
    factor = tensor.tensor(tril, requires_grad=True)

    def bartlett(factor):
        tensor.manual_seed(6)
        return tensor.distributions.Wishart(tensor.tensor(5.0, dtype=tensor.float64), scale_tril=factor.tril(),
                                            validate_args=False).rsample((2,))

    assert gradcheck(bartlett, (factor,))
