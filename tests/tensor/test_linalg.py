"""Matrix products: matmul for every rank combination, mm, bmm, dot and einsum.

Values and shapes against numpy on every device, gradients with float64 ``gradcheck`` (and
``gradgradcheck`` for a subset), a table against torch, and the error messages for bad shapes.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import autograd
import tensor
from tests.helpers import assert_close
from tests.tensor._linalg_oracle import grads_match, random

RNG = np.random.default_rng(2)

# (name, shape of a, shape of b): every rank combination matmul supports, incl. broadcast batches.
MATMUL_SHAPES = [
    ("1d_1d", (4,), (4,)),
    ("1d_2d", (3,), (3, 5)),
    ("2d_1d", (2, 3), (3,)),
    ("2d_2d", (2, 3), (3, 4)),
    ("1d_3d", (3,), (2, 3, 4)),
    ("3d_1d", (2, 4, 3), (3,)),
    ("3d_2d", (2, 4, 3), (3, 5)),
    ("2d_3d", (4, 3), (2, 3, 5)),
    ("3d_3d", (2, 4, 3), (2, 3, 5)),
    ("batch_broadcast", (2, 1, 4, 3), (5, 3, 2)),
    ("batch_broadcast_1", (1, 4, 3), (3, 3, 2)),
    ("empty_batch", (0, 2, 3), (3, 4)),
    ("empty_inner", (2, 0), (0, 3)),
    ("empty_1d", (0,), (0,)),
]


def _pair(shape_a, shape_b, dtype=np.float64):
    return RNG.standard_normal(shape_a).astype(dtype), RNG.standard_normal(shape_b).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,shape_a,shape_b", MATMUL_SHAPES, ids=[c[0] for c in MATMUL_SHAPES])
def test_matmul_matches_numpy(device, name, shape_a, shape_b, dtype):
    a, b = _pair(shape_a, shape_b, dtype)
    ta, tb = tensor.tensor(a, device=device), tensor.tensor(b, device=device)
    assert_close(ta @ tb, a @ b, rtol=1e-4, atol=1e-5)
    assert_close(tensor.matmul(ta, tb), a @ b, rtol=1e-4, atol=1e-5)


def test_matmul_integer(device):
    a, b = np.arange(6).reshape(2, 3), np.arange(12).reshape(3, 4)
    assert_close(tensor.tensor(a, device=device) @ tensor.tensor(b, device=device), a @ b)


def test_matmul_non_contiguous(device):
    a, b = _pair((3, 2), (4, 3))
    ta, tb = tensor.tensor(a, device=device).T, tensor.tensor(b, device=device).T
    assert not ta.is_contiguous()
    assert_close(ta @ tb, a.T @ b.T)
    batch = RNG.standard_normal((3, 2, 4))
    assert_close(tensor.tensor(batch, device=device).permute(1, 0, 2).mT @ ta.T,
                 batch.transpose(1, 0, 2).swapaxes(-1, -2) @ a)


@pytest.mark.parametrize("name,shape_a,shape_b", MATMUL_SHAPES, ids=[c[0] for c in MATMUL_SHAPES])
def test_matmul_gradcheck(name, shape_a, shape_b):
    a, b = _pair(shape_a, shape_b)
    ta, tb = tensor.tensor(a, requires_grad=True), tensor.tensor(b, requires_grad=True)
    assert autograd.gradcheck(tensor.matmul, (ta, tb))


@pytest.mark.parametrize("name", ["1d_1d", "1d_3d", "3d_1d", "batch_broadcast"])
def test_matmul_gradgradcheck(name):
    _, shape_a, shape_b = next(c for c in MATMUL_SHAPES if c[0] == name)
    a, b = _pair(shape_a, shape_b)
    ta, tb = tensor.tensor(a, requires_grad=True), tensor.tensor(b, requires_grad=True)
    assert autograd.gradgradcheck(tensor.matmul, (ta, tb))


def test_matmul_gradient_of_one_side_only():
    a, b = _pair((2, 3), (3,))
    ta = tensor.tensor(a, requires_grad=True)
    (ta @ tensor.tensor(b)).sum().backward()
    assert_close(ta.grad, np.broadcast_to(b, (2, 3)))


@pytest.mark.parametrize("shape_a,shape_b,pattern", [
    ((2, 3), (4, 5), r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"),
    ((3,), (4, 5), r"cannot be multiplied \(1x3 and 4x5\)"),
    ((2, 3), (4,), r"cannot be multiplied \(2x3 and 4x1\)"),
    ((7, 2, 3), (7, 2, 3), r"cannot be multiplied \(2x3 and 2x3\)"),
    ((), (3,), r"both arguments to matmul need to be at least 1D, but they are 0D and 1D"),
    ((3,), (), r"at least 1D, but they are 1D and 0D"),
])
def test_matmul_shape_errors(device, shape_a, shape_b, pattern):
    a, b = tensor.zeros(shape_a, device=device), tensor.zeros(shape_b, device=device)
    with pytest.raises(RuntimeError, match=pattern):
        a @ b


def test_matmul_dtype_mismatch(device):
    with pytest.raises(RuntimeError, match="same dtype.*float32 and float64"):
        tensor.zeros(2, 2, device=device) @ tensor.zeros(2, 2, dtype=tensor.float64, device=device)


def test_matmul_batch_dims_that_do_not_broadcast(device):
    with pytest.raises(RuntimeError, match=r"size of tensor a \(2\) must match the size of tensor b \(3\) "
                                           r"at non-singleton dimension 1"):
        tensor.zeros(5, 2, 2, 3, device=device) @ tensor.zeros(3, 3, 4, device=device)


def test_mm_bmm_dot(device):
    a, b = _pair((2, 3), (3, 4))
    assert_close(tensor.mm(tensor.tensor(a, device=device), tensor.tensor(b, device=device)), a @ b)
    x, y = _pair((5, 2, 3), (5, 3, 4))
    assert_close(tensor.tensor(x, device=device).bmm(tensor.tensor(y, device=device)), x @ y)
    u, v = _pair((6,), (6,))
    out = tensor.tensor(u, device=device).dot(tensor.tensor(v, device=device))
    assert out.shape == () and out.dtype is tensor.float64
    assert_close(out, np.dot(u, v))


def test_mm_bmm_dot_gradcheck():
    for fn, shapes in [(tensor.mm, ((2, 3), (3, 2))), (tensor.bmm, ((2, 2, 3), (2, 3, 1))),
                       (tensor.dot, ((4,), (4,)))]:
        a, b = _pair(*shapes)
        leaves = (tensor.tensor(a, requires_grad=True), tensor.tensor(b, requires_grad=True))
        assert autograd.gradcheck(fn, leaves)


@pytest.mark.parametrize("fn,shape_a,shape_b,pattern", [
    (tensor.mm, (2, 3), (3,), r"mm: expected 2D tensors, got 2D and 1D"),
    (tensor.mm, (2, 3), (4, 2), r"cannot be multiplied \(2x3 and 4x2\)"),
    (tensor.bmm, (2, 3), (2, 3, 3), r"batch1 must be a 3D tensor"),
    (tensor.bmm, (2, 2, 3), (3, 3, 2), r"Expected size for first two dimensions of batch2 tensor to be: "
                                       r"\[2, 3\] but got: \[3, 3\]"),
    (tensor.dot, (2, 3), (3,), r"1D tensors expected, but got 2D and 1D tensors"),
])
def test_mm_bmm_dot_errors(device, fn, shape_a, shape_b, pattern):
    with pytest.raises(RuntimeError, match=pattern):
        fn(tensor.zeros(shape_a, device=device), tensor.zeros(shape_b, device=device))


# (equation, operand shapes): explicit and implicit outputs, contractions without a trace, and letters
# summed inside one operand only.
EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),          # implicit output "ik"
    ("ji,jk", [(3, 2), (3, 4)]),          # implicit output is sorted: "ik"
    ("i,i->", [(5,), (5,)]),
    ("i,j->ij", [(3,), (4,)]),             # outer product
    ("ij->ji", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("ij->j", [(2, 3)]),                   # "i" summed in the only operand
    ("ij,k->ik", [(2, 3), (4,)]),          # "j" summed only in the first operand
    ("ijk,k->i", [(2, 3, 4), (4,)]),       # "j" summed only in the first operand, "k" contracted
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
    ("i j , j k -> i k", [(2, 3), (3, 4)]),
    ("ij,jk->ik", [(0, 3), (3, 4)]),
]


@pytest.mark.parametrize("equation,shapes", EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
def test_einsum_matches_numpy(device, equation, shapes):
    arrays = [RNG.standard_normal(s) for s in shapes]
    out = tensor.einsum(equation, *[tensor.tensor(a, device=device) for a in arrays])
    assert_close(out, np.einsum(equation.replace(" ", ""), *arrays))
    listed = tensor.einsum(equation, [tensor.tensor(a, device=device) for a in arrays])
    assert_close(listed, out)


@pytest.mark.parametrize("equation,shapes", EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
def test_einsum_gradcheck(equation, shapes):
    leaves = [tensor.tensor(RNG.standard_normal(s), requires_grad=True) for s in shapes]
    assert autograd.gradcheck(lambda *ts: tensor.einsum(equation, *ts), leaves)


@pytest.mark.parametrize("equation", ["ij,jk->ik", "ij,k->ik", "i,j->ij"])
def test_einsum_gradgradcheck(equation):
    shapes = next(c[1] for c in EINSUM_CASES if c[0] == equation)
    leaves = [tensor.tensor(RNG.standard_normal(s), requires_grad=True) for s in shapes]
    assert autograd.gradgradcheck(lambda *ts: tensor.einsum(equation, *ts), leaves)


def test_einsum_promotes_dtypes_and_takes_non_contiguous(device):
    a, b = np.arange(6).reshape(2, 3), RNG.standard_normal((4, 3)).astype(np.float32)
    out = tensor.einsum("ij,jk->ik", tensor.tensor(a, device=device), tensor.tensor(b, device=device).T)
    assert out.dtype is tensor.float32
    assert_close(out, (a @ b.T).astype(np.float32), rtol=1e-5)


def test_einsum_operand_count_error(device):
    with pytest.raises(RuntimeError, match=r"einsum\(\): more operands.*2 operands for 1 subscripts"):
        tensor.einsum("ij->i", tensor.zeros(2, 2, device=device), tensor.zeros(2, device=device))


# (name, fn(module, a, b), shapes) compared with torch, values and gradients.
TORCH_CASES = [
    ("matmul_1d_3d", lambda m, a, b: a @ b, (3,), (2, 3, 4)),
    ("matmul_broadcast", lambda m, a, b: m.matmul(a, b), (2, 1, 4, 3), (5, 3, 2)),
    ("matmul_3d_1d", lambda m, a, b: a @ b, (2, 4, 3), (3,)),
    ("mm_T", lambda m, a, b: m.mm(a.T, b), (3, 2), (3, 4)),
    ("bmm", lambda m, a, b: m.bmm(a, b.mT), (2, 2, 3), (2, 4, 3)),
    ("dot", lambda m, a, b: m.dot(a, b) * a, (5,), (5,)),
    ("einsum_attention", lambda m, a, b: m.einsum("bqd,bkd->bqk", a, b), (2, 3, 4), (2, 5, 4)),
    ("einsum_one_sided_sum", lambda m, a, b: m.einsum("ij,k->ik", a, b), (2, 3), (4,)),
]


@pytest.mark.parametrize("name,fn,shape_a,shape_b", TORCH_CASES, ids=[c[0] for c in TORCH_CASES])
def test_linalg_matches_torch(torch, name, fn, shape_a, shape_b):
    a, b = _pair(shape_a, shape_b)
    ours = [tensor.tensor(a, requires_grad=True), tensor.tensor(b, requires_grad=True)]
    theirs = [torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)]
    out, ref = fn(tensor, *ours), fn(torch, *theirs)
    assert_close(out, ref.detach().numpy())
    weights = RNG.standard_normal(ref.shape)
    (out * tensor.tensor(weights)).sum().backward()
    (ref * torch.tensor(weights)).sum().backward()
    for mine, reference in zip(ours, theirs):
        assert_close(mine.grad, reference.grad.numpy())


def test_cholesky_ex_reports_info_instead_of_raising_as_torch_does(torch):
    not_pd = np.array([[1.0, 2.0], [2.0, 1.0]])  # its second leading minor is negative
    indefinite3 = np.array([[4.0, 1.0, 0.0], [1.0, -1.0, 0.0], [0.0, 0.0, 1.0]])
    for batch in (not_pd, np.stack([not_pd, 2 * np.eye(2)]), indefinite3, 3 * np.eye(3)):
        ours, theirs = tensor.linalg.cholesky_ex(tensor.tensor(batch)), torch.linalg.cholesky_ex(torch.tensor(batch))
        assert ours.info.tolist() == theirs.info.tolist() and ours.info.dtype == tensor.int32
        ok = np.asarray(theirs.info) == 0  # torch leaves LAPACK's partial work in a failed factor
        np.testing.assert_allclose(ours.L.numpy()[ok], theirs.L.numpy()[ok])
    with pytest.raises(tensor.linalg.LinAlgError):
        tensor.linalg.cholesky_ex(tensor.tensor(not_pd), check_errors=True)
    upper = tensor.linalg.cholesky_ex(tensor.tensor(np.stack([not_pd, 2 * np.eye(2)])), upper=True)
    np.testing.assert_allclose(upper.L.numpy()[1], np.sqrt(2) * np.eye(2))
    assert tensor.linalg.inv_ex(tensor.eye(2)).inverse.tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert tensor.linalg.solve_ex(tensor.eye(2), tensor.ones(2)).result.tolist() == [1.0, 1.0]


def test_inv_ex_and_solve_ex_report_singular_matrices_as_torch_does(torch):
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    for batch in (singular, np.stack([singular, 2 * np.eye(2)]), np.zeros((3, 3))):
        ours, theirs = tensor.linalg.inv_ex(tensor.tensor(batch)), torch.linalg.inv_ex(torch.tensor(batch))
        assert ours.info.tolist() == theirs.info.tolist() and ours.info.dtype == tensor.int32
        ok = np.asarray(theirs.info) == 0
        np.testing.assert_allclose(ours.inverse.numpy()[ok], theirs.inverse.numpy()[ok])
        assert not np.isfinite(ours.inverse.numpy()[~ok]).all()  # what a zero pivot gives, not a number
        for rhs, left in ((np.ones(batch.shape[:-1]), True), (np.ones(batch.shape[:-1] + (2,)), True),
                          (np.ones(batch.shape[:-2] + (2, batch.shape[-1])), False)):
            ours = tensor.linalg.solve_ex(tensor.tensor(batch), tensor.tensor(rhs), left=left)
            theirs = torch.linalg.solve_ex(torch.tensor(batch), torch.tensor(rhs), left=left)
            assert ours.info.tolist() == theirs.info.tolist() and ours.result.shape == tuple(theirs.result.shape)
            np.testing.assert_allclose(ours.result.numpy()[ok], theirs.result.numpy()[ok])
    for fn in (lambda: tensor.linalg.inv_ex(tensor.tensor(singular), check_errors=True),
               lambda: tensor.linalg.solve_ex(tensor.tensor(singular), tensor.ones(2), check_errors=True)):
        with pytest.raises(tensor.linalg.LinAlgError):
            fn()


def _hermitian_pd(*shape):
    a = random(*shape, complex_=True)
    return a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])


def _phase_free(svd_or_eigh):
    """The decomposition's outputs without their vectors' arbitrary phases (magnitudes)."""
    return tuple(t.abs() if t.is_complex() else t for t in svd_or_eigh)


# (name, fn(module, *inputs), inputs): complex input, values and gradients against torch.
COMPLEX_CASES = [
    ("vector_norm", lambda m, a: m.linalg.vector_norm(a), [random(5, complex_=True)]),
    ("vector_norm_1", lambda m, a: m.linalg.vector_norm(a, 1), [random(5, complex_=True)]),
    ("vector_norm_3_dim", lambda m, a: m.linalg.vector_norm(a, 3, dim=0), [random(4, 2, complex_=True)]),
    ("torch_norm", lambda m, a: m.norm(a), [random(3, 4, complex_=True)]),
    ("norm_2", lambda m, a: m.linalg.norm(a, 2), [random(3, 4, complex_=True)]),
    ("matrix_norm_nuc", lambda m, a: m.linalg.matrix_norm(a, "nuc"), [random(2, 3, 3, complex_=True)]),
    ("matrix_norm_1", lambda m, a: m.linalg.matrix_norm(a, 1), [random(2, 3, 3, complex_=True)]),
    ("det", lambda m, a: m.linalg.det(a), [random(2, 3, 3, complex_=True)]),
    ("slogdet", lambda m, a: tuple(m.linalg.slogdet(a)), [random(2, 3, 3, complex_=True)]),
    ("inv", lambda m, a: m.linalg.inv(a), [random(2, 3, 3, complex_=True)]),
    ("inv_ex", lambda m, a: m.linalg.inv_ex(a).inverse, [random(3, 3, complex_=True)]),
    ("solve", lambda m, a, b: m.linalg.solve(a, b), [random(3, 3, complex_=True), random(3, 2, complex_=True)]),
    ("solve_right", lambda m, a, b: m.linalg.solve(a, b, left=False), [random(3, 3, complex_=True),
                                                                      random(2, 3, complex_=True)]),
    ("cholesky", lambda m, a: m.linalg.cholesky(a), [_hermitian_pd(2, 3, 3)]),
    ("cholesky_upper", lambda m, a: m.linalg.cholesky_ex(a, upper=True).L, [_hermitian_pd(3, 3)]),
    ("eigvalsh", lambda m, a: m.linalg.eigvalsh(a, "U"), [random(2, 3, 3, complex_=True)]),
    ("eigh", lambda m, a: _phase_free(m.linalg.eigh(a)), [_hermitian_pd(2, 3, 3)]),
    ("svdvals", lambda m, a: m.linalg.svdvals(a), [random(2, 3, 3, complex_=True)]),
    ("svd_tall", lambda m, a: _phase_free(m.linalg.svd(a, full_matrices=False)), [random(4, 3, complex_=True)]),
    ("svd_wide", lambda m, a: _phase_free(m.linalg.svd(a, full_matrices=False)), [random(3, 4, complex_=True)]),
    ("pinv", lambda m, a: m.linalg.pinv(a), [random(4, 3, complex_=True)]),
    ("cond", lambda m, a: m.linalg.cond(a), [random(2, 3, 3, complex_=True)]),
    ("qr", lambda m, a: tuple(m.linalg.qr(a)), [random(4, 3, complex_=True)]),
    ("matrix_power_neg", lambda m, a: m.linalg.matrix_power(a, -2), [random(3, 3, complex_=True)]),
    ("lstsq", lambda m, a, b: m.linalg.lstsq(a, b).solution, [random(4, 3, complex_=True),
                                                              random(4, 2, complex_=True)]),
    # torch's own eigh gradient is Hermitian: real symmetric input too
    ("eigh_real", lambda m, a: _phase_free(m.linalg.eigh(a)), [random(3, 3) + random(3, 3).T]),
]


@pytest.mark.parametrize("name,fn,arrays", COMPLEX_CASES, ids=[c[0] for c in COMPLEX_CASES])
def test_complex_linalg_matches_torch(torch, name, fn, arrays):
    ours, theirs = fn(tensor, *map(tensor.tensor, arrays)), fn(torch, *map(torch.tensor, arrays))
    ours, theirs = (ours, theirs) if isinstance(theirs, tuple) else ((ours,), (theirs,))
    for mine, reference in zip(ours, theirs, strict=True):
        assert mine.dtype.name == str(reference.dtype).removeprefix("torch.")
        assert_close(mine, reference.resolve_conj().numpy(), atol=1e-10)
    grads_match(torch, lambda *t: fn(tensor, *t), lambda *t: fn(torch, *t), arrays, atol=1e-8)


def test_complex_singular_det_gradient_is_the_adjugate():
    # torch gives 0 here; the gradient of re(det) is conj(adj(A))^T = [[4, -2 + 2i], [-2, 1 - i]]
    A = tensor.tensor(np.array([[1 + 1j, 2], [2 + 2j, 4]]), requires_grad=True)
    tensor.linalg.det(A).real.backward()
    assert_close(A.grad, np.array([[4, -2 + 2j], [-2, 1 - 1j]]), atol=1e-12)


def test_complex_phase_dependent_svd_loss_raises():
    A = tensor.tensor(random(3, 3, complex_=True), requires_grad=True)
    with pytest.raises(RuntimeError, match="e\\^\\{i phi\\}"):
        tensor.linalg.svd(A).U.imag.sum().backward()


def test_linalg_diagonal_takes_the_last_two_dims(torch):
    x = np.arange(18.0).reshape(2, 3, 3)
    for kwargs in ({}, {"offset": 1}, {"dim1": 0, "dim2": 2}):
        ours = tensor.linalg.diagonal(tensor.tensor(x), **kwargs)
        assert_close(ours, torch.linalg.diagonal(torch.tensor(x), **kwargs).numpy())


@pytest.mark.parametrize("p", ["fro", "nuc", 1, -1, float("inf"), -float("inf")])
def test_cond_of_a_singular_matrix_is_inf(torch, p):
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert tensor.linalg.cond(tensor.tensor(singular), p).item() == float("inf")
    batch = np.stack([singular, np.array([[2.0, 1.0], [0.0, 3.0]])])
    expected = [float("inf"), torch.linalg.cond(torch.tensor(batch[1]), p).item()]
    assert_close(tensor.linalg.cond(tensor.tensor(batch), p), expected)
    assert tensor.linalg.cond(tensor.zeros(0, 0), p).item() == torch.linalg.cond(torch.zeros(0, 0), p).item() == 0


EMPTY_CASES = [
    ("svd", lambda m, a: m.linalg.svd(a)),
    ("svd_reduced", lambda m, a: m.linalg.svd(a, full_matrices=False)),
    ("svdvals", lambda m, a: m.linalg.svdvals(a)),
    ("pinv", lambda m, a: m.linalg.pinv(a)),
    ("matrix_rank", lambda m, a: m.linalg.matrix_rank(a)),
    ("qr", lambda m, a: m.linalg.qr(a)),
    ("cond", lambda m, a: m.linalg.cond(a)),
    ("lstsq", lambda m, a: m.linalg.lstsq(a, a).solution),
    *[(f"matrix_norm_{p}", lambda m, a, p=p: m.linalg.matrix_norm(a, p)) for p in ("fro", "nuc", 1, 2, float("inf"))],
    *[(f"norm_{p}", lambda m, a, p=p: m.linalg.norm(a, p)) for p in (1, 2, float("inf"))],
]


@pytest.mark.parametrize("name,fn", EMPTY_CASES, ids=[c[0] for c in EMPTY_CASES])
@pytest.mark.parametrize("shape", [(0, 3, 3), (0, 0), (0, 3, 2)])
def test_empty_matrices_match_torch(torch, name, fn, shape):
    if name.startswith("norm_") and len(shape) == 3:
        return  # torch.linalg.norm wants a dim for 3-d input
    ours, theirs = fn(tensor, tensor.zeros(shape)), fn(torch, torch.zeros(shape))
    ours, theirs = (ours, theirs) if isinstance(theirs, tuple) else ((ours,), (theirs,))
    for mine, reference in zip(ours, theirs, strict=True):
        assert mine.shape == tuple(reference.shape)
        assert_close(mine, reference.numpy())


def test_matrix_power_zero_stays_on_the_graph():
    A = tensor.ones(2, 2, requires_grad=True)
    result = tensor.linalg.matrix_power(A, 0)
    assert result.tolist() == [[1.0, 0.0], [0.0, 1.0]]
    result.sum().backward()
    assert A.grad.tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_hermitian_pinv_and_rank_read_the_lower_triangle(torch):
    a = np.array([[2.0, 1.0], [0.0, 3.0]])
    ours = tensor.linalg.pinv(tensor.tensor(a), hermitian=True)
    assert_close(ours, torch.linalg.pinv(torch.tensor(a), hermitian=True).numpy())
    assert tensor.linalg.matrix_rank(tensor.tensor([[1.0, 5.0], [2.0, 4.0]]), hermitian=True).item() == 1
    h = _hermitian_pd(2, 3, 3)
    assert_close(tensor.linalg.pinv(tensor.tensor(h), hermitian=True), np.linalg.pinv(h), atol=1e-12)
    for fn in (tensor.linalg.pinv, tensor.linalg.matrix_rank):
        with pytest.raises(RuntimeError, match="square"):
            fn(tensor.ones(4, 3), hermitian=True)


INTEGER_ERRORS = [
    (NotImplementedError, lambda a: tensor.linalg.eigh(a)),
    (NotImplementedError, lambda a: tensor.linalg.eigvalsh(a)),
    (NotImplementedError, lambda a: tensor.linalg.lu(a)),
    (NotImplementedError, lambda a: tensor.linalg.lu_factor(a)),
    (NotImplementedError, lambda a: tensor.linalg.solve_triangular(a, a, upper=True)),
    (RuntimeError, lambda a: tensor.linalg.qr(a)),
    (RuntimeError, lambda a: tensor.linalg.vecdot(a, a)),
    (RuntimeError, lambda a: tensor.linalg.vector_norm(a, dtype=tensor.float64)),
    (RuntimeError, lambda a: tensor.linalg.svd(a)),
    (RuntimeError, lambda a: tensor.linalg.det(a)),
    (RuntimeError, lambda a: tensor.linalg.matrix_power(a, -1)),
]


@pytest.mark.parametrize("error,fn", INTEGER_ERRORS)
def test_integer_input_raises_as_torch(error, fn):
    with pytest.raises(error) as info:
        fn(tensor.ones(2, 2, dtype=tensor.int64))
    assert info.type is error


def test_norm_argument_errors_as_torch():
    with pytest.raises(RuntimeError, match="1D or 2D"):
        tensor.linalg.norm(tensor.ones(2, 2, 2), 2)
    with pytest.raises(RuntimeError, match="complex"):
        tensor.linalg.vector_norm(tensor.ones(2, dtype=tensor.complex64), dtype=tensor.float64)
    with pytest.raises(RuntimeError, match="narrowing"):
        tensor.linalg.vector_norm(tensor.ones(2), dtype=tensor.float16)
    widened = tensor.linalg.vector_norm(tensor.ones(2, dtype=tensor.complex64), dtype=tensor.complex128)
    assert widened.dtype == tensor.float64
    assert tensor.linalg.vecdot(tensor.tensor([1j]), tensor.tensor([1j])).item() == 1


def test_logdet_of_complex_matrices_matches_torch(torch):
    a = np.array([[[1 + 2j, 0.5], [0.3j, 2 - 1j]], [[0, 1], [1, 0]]])

    def run(lib):
        A = lib.tensor(a, requires_grad=True)
        d = lib.logdet(A)
        lib.view_as_real(d).sum().backward()
        return np.array(d.tolist()), np.array(A.grad.tolist())

    for ours, theirs in zip(run(tensor), run(torch)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def _grad(lib, fn, value, **kw):
    x = lib.tensor(value, dtype=lib.float64, requires_grad=True, **kw)
    fn(lib, x).sum().backward()
    return x.grad.tolist()


VALUE_ONLY_SPECTRA = {
    "svdvals": lambda L, A: L.linalg.svdvals(A),
    "svd_S": lambda L, A: L.linalg.svd(A, full_matrices=False)[1],
    "eigh_values": lambda L, A: L.linalg.eigh(A)[0],
    "eigvalsh": lambda L, A: L.linalg.eigvalsh(A),
    "eigvals": lambda L, A: L.linalg.eigvals(A).real,
    "norm2": lambda L, A: L.linalg.matrix_norm(A, 2),
    "norm_minus2": lambda L, A: L.linalg.matrix_norm(A, -2),
    "nuc": lambda L, A: L.linalg.norm(A, "nuc"),
    "cond": lambda L, A: L.linalg.cond(A),
}


@pytest.mark.parametrize("name", sorted(VALUE_ONLY_SPECTRA))
@pytest.mark.parametrize("matrix", [[[1.0, 0.0], [0.0, 1.0]], [[0.0, 3.0], [3.0, 0.0]]])
def test_value_only_spectra_have_finite_gradients_for_repeated_values(torch, name, matrix):
    fn = VALUE_ONLY_SPECTRA[name]
    assert_close(_grad(tensor, fn, matrix), _grad(torch, fn, matrix), atol=1e-12)


@pytest.mark.parametrize(
    "equation, shapes",
    [("ij,j->i", [(2, 3), (1,)]), ("ij,jk->ik", [(2, 1), (3, 4)]), ("ij,ij->", [(2, 1), (1, 3)]),
     ("ii", [(3, 3)]), ("ii->i", [(3, 3)]), ("iji->j", [(3, 2, 3)]), ("...ii->...i", [(2, 3, 3)]),
     ("ii,i->i", [(3, 3), (1,)])],
)
def test_einsum_backward_with_broadcast_and_repeated_indices(torch, equation, shapes):
    values = [np.random.default_rng(i).standard_normal(s) for i, s in enumerate(shapes)]

    def grads(lib):
        xs = [lib.tensor(v, requires_grad=True) for v in values]
        first = lib.autograd.grad((lib.einsum(equation, *xs) ** 2).sum(), xs, create_graph=True)
        second = lib.autograd.grad(sum((g * g).sum() for g in first), xs)
        return [g.tolist() for g in first + second]

    for ours, theirs in zip(grads(tensor), grads(torch)):
        assert_close(ours, theirs, atol=1e-10)


def test_einsum_reductions_of_bool_are_int64():
    assert tensor.einsum("ii", tensor.eye(3, dtype=tensor.bool)).item() == 3
    assert tensor.einsum("ij->", tensor.ones(2, 3, dtype=tensor.bool)).dtype is tensor.int64
    assert tensor.einsum("ii->i", tensor.eye(2, dtype=tensor.bool)).dtype is tensor.bool


def test_matrix_rank_and_pinv_take_tensor_and_legacy_tolerances():
    A = tensor.tensor([[1.0, 0.0], [0.0, 1e-3]], dtype=tensor.float64)
    B = tensor.stack([A, 10 * A])
    assert tensor.linalg.matrix_rank(B, atol=tensor.tensor([1e-2, 1e-1], dtype=tensor.float64)).tolist() == [1, 1]
    assert tensor.linalg.matrix_rank(A, tol=1e-2).item() == 1
    assert tensor.linalg.matrix_rank(A, 1e-2).item() == 1
    expected = [[1.0, 0.0], [0.0, 0.0]]
    assert tensor.linalg.pinv(A, 1e-2).tolist() == expected
    assert tensor.linalg.pinv(A, rcond=1e-2).tolist() == expected


@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
def test_lstsq_outputs_follow_the_driver(torch, driver):
    A = np.random.default_rng(0).standard_normal((2, 4, 3))
    B = np.random.default_rng(1).standard_normal((2, 4, 2))
    ours = tensor.linalg.lstsq(tensor.tensor(A), tensor.tensor(B), driver=driver)
    theirs = torch.linalg.lstsq(torch.tensor(A), torch.tensor(B), driver=driver)
    for a, b in zip(ours, theirs):
        assert tuple(a.shape) == tuple(b.shape)
        assert_close(a.tolist(), b.tolist(), atol=1e-10)


def test_lstsq_rejects_an_unknown_driver():
    with pytest.raises(RuntimeError, match="driver"):
        tensor.linalg.lstsq(tensor.eye(2), tensor.eye(2), driver="gelsx")


@pytest.mark.parametrize("ord", [0.5, -1.0, 1.5])
def test_vector_norm_gradient_at_zero_elements(torch, ord):
    fn = lambda L, x: L.linalg.vector_norm(x, ord)  # noqa: E731
    assert_close(_grad(tensor, fn, [3.0, 0.0, -4.0]), _grad(torch, fn, [3.0, 0.0, -4.0]))


def test_zero_norms_stay_on_the_graph():
    x = tensor.randn(2, 3, requires_grad=True)
    for result in (tensor.linalg.vector_norm(x, 0), x.norm(p=0), tensor.cdist(x, tensor.randn(4, 3), p=0)):
        result.sum().backward()
        assert x.grad.abs().sum().item() == 0


def test_cdist_inf_gives_every_tie_the_whole_gradient(torch):
    fn = lambda L, a: L.cdist(a, L.tensor([[1.0, -1.0], [0.5, 2.0]], dtype=L.float64), p=math.inf)  # noqa: E731
    assert_close(_grad(tensor, fn, [[0.0, 0.0]]), _grad(torch, fn, [[0.0, 0.0]]))
    assert tensor.cdist(tensor.zeros(2, 0), tensor.zeros(3, 0), p=math.inf).tolist() == [[0.0] * 3] * 2


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_vector_norm_of_half_precision_accumulates_in_float32_as_torch(dtype, torch):
    """Squares of float16 values above 256 overflow and tiny ones underflow: torch sums in float32."""
    for values, ord in (([300.0, 300.0], 2), ([1e-4, 1e-4], 2), ([3e4] * 3, 3)):
        got = [lib.linalg.vector_norm(lib.tensor(values, dtype=getattr(lib, dtype)), ord) for lib in (tensor, torch)]
        assert str(got[0].dtype).split(".")[-1] == dtype
        assert got[0].float().item() == got[1].float().item()
