"""Matrix products: matmul for every rank combination, mm, bmm, dot and einsum.

Values and shapes against numpy on every device, gradients with float64 ``gradcheck`` (and
``gradgradcheck`` for a subset), a table against torch, and the error messages for bad shapes.
"""

from __future__ import annotations

import numpy as np
import pytest

import autograd
import tensor
from tests.helpers import assert_close

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
