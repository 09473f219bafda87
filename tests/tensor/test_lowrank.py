"""``svd_lowrank`` and ``pca_lowrank`` (tensor/_lowrank.py, Note [Randomized SVD]) against the exact
SVD, torch's, and float64 finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import tensor
from autograd import gradcheck

RNG = np.random.default_rng(5)


def _low_rank(*batch, m=12, n=8, rank=3):
    return RNG.standard_normal((*batch, m, rank)) @ RNG.standard_normal((*batch, rank, n))


@pytest.mark.parametrize("shape", [(12, 8), (8, 12), (2, 12, 8), (3, 6, 9)], ids=str)
def test_a_low_rank_matrix_is_factored_exactly(shape):
    a = _low_rank(*shape[:-2], m=shape[-2], n=shape[-1])
    U, S, V = tensor.svd_lowrank(tensor.tensor(a), q=5)
    batch = shape[:-2]
    assert (U.shape, S.shape, V.shape) == ((*batch, shape[-2], 5), (*batch, 5), (*batch, shape[-1], 5))
    np.testing.assert_allclose((U @ tensor.diag_embed(S) @ V.mH).numpy(), a, atol=1e-10)
    np.testing.assert_allclose(S.numpy()[..., :3], np.linalg.svd(a, compute_uv=False)[..., :3], rtol=1e-10)
    np.testing.assert_allclose((U.mH @ U).numpy(), np.broadcast_to(np.eye(5), (*shape[:-2], 5, 5)), atol=1e-10)


def test_singular_values_match_torch(torch):
    a = _low_rank(m=20, n=10, rank=4)
    ours = tensor.svd_lowrank(tensor.tensor(a), q=6, niter=3)[1]
    theirs = torch.svd_lowrank(torch.tensor(a), q=6, niter=3)[1]
    np.testing.assert_allclose(ours.numpy()[:4], theirs.numpy()[:4], rtol=1e-9)


def test_the_leading_values_of_a_full_rank_matrix(torch):
    # Fast-decaying spectrum: the randomized method finds the leading values closely.
    u, _ = np.linalg.qr(RNG.standard_normal((30, 10)))
    v, _ = np.linalg.qr(RNG.standard_normal((15, 10)))
    a = u @ np.diag(2.0 ** -np.arange(10)) @ v.T
    S = tensor.svd_lowrank(tensor.tensor(a), q=6, niter=4)[1].numpy()
    np.testing.assert_allclose(S[:4], 2.0 ** -np.arange(4), rtol=1e-6)
    np.testing.assert_allclose(torch.svd_lowrank(torch.tensor(a), q=6, niter=4)[1].numpy()[:4], S[:4], rtol=1e-6)


def test_M_is_subtracted_and_pca_centres(torch):
    a = _low_rank(m=10, n=6, rank=2) + 5.0  # rank 3 with the offset; rank 2 centred
    mean = a.mean(axis=0, keepdims=True)
    U, S, V = tensor.svd_lowrank(tensor.tensor(a), q=4, M=tensor.tensor(mean))
    np.testing.assert_allclose((U @ tensor.diag(S) @ V.T).numpy(), a - mean, atol=1e-10)
    _, S_pca, V_pca = tensor.pca_lowrank(tensor.tensor(a), q=4)
    np.testing.assert_allclose(S_pca.numpy(), S.numpy(), atol=1e-10)
    theirs = torch.pca_lowrank(torch.tensor(a), q=4)[1].numpy()
    np.testing.assert_allclose(S_pca.numpy()[:2], theirs[:2], rtol=1e-9)
    assert tensor.pca_lowrank(tensor.tensor(a))[1].shape == (6,)  # q = min(6, m, n)
    assert tensor.pca_lowrank(tensor.tensor(a), center=False)[1][0] > S_pca[0]


def test_float32_and_seeded_draws():
    a = tensor.tensor(_low_rank(), dtype=tensor.float32)
    tensor.manual_seed(3)
    first = tensor.svd_lowrank(a, q=4)[0]
    tensor.manual_seed(3)
    assert first.dtype == tensor.float32 and tensor.equal(first, tensor.svd_lowrank(a, q=4)[0])


@pytest.mark.parametrize("fn", ["svd_lowrank", "pca_lowrank"])
def test_bad_arguments_raise_torchs_errors(torch, fn):
    for lib in (tensor, torch) if fn == "pca_lowrank" else (tensor,):  # torch's svd_lowrank checks nothing
        a = lib.ones(4, 3)
        with pytest.raises(ValueError, match="must be non-negative integer and not greater than"):
            getattr(lib, fn)(a, q=5)
        with pytest.raises(ValueError, match="niter"):
            getattr(lib, fn)(a, q=2, niter=-1)


def test_gradients_against_finite_differences():
    a = tensor.tensor(RNG.standard_normal((7, 5)), requires_grad=True)

    def leading_values(x):
        tensor.manual_seed(0)  # the same test matrix at every evaluation
        return tensor.svd_lowrank(x, q=5, niter=2)[1]

    assert gradcheck(leading_values, (a,), atol=1e-6)
