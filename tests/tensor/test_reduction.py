"""Reductions: sum, mean, prod, var/std, logsumexp, all/any and sum_to_size.

Forward values, dtypes and shapes are checked against numpy on every device (function and
method forms, dim/keepdim, negative dims, non-contiguous, empty and 0-d inputs), gradients
with float64 ``gradcheck`` (``gradgradcheck`` for a subset), and values and gradients
against torch. max/min and the arg-reductions live in ``test_reduction_minmax.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

import autograd
import tensor
from tests.helpers import assert_close, to_numpy

RNG = np.random.default_rng(5)
X234 = RNG.uniform(-2.0, 2.0, (2, 3, 4))


def _np_logsumexp(x, axis, keepdims):
    m = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


# (name, our call with (t, dim, keepdim), numpy reference with (x, axis, keepdims))
REDUCTIONS = [
    ("sum", lambda t, d, k: tensor.sum(t, d, k), lambda x, a, k: np.sum(x, a, keepdims=k)),
    ("mean", lambda t, d, k: tensor.mean(t, d, k), lambda x, a, k: np.mean(x, a, keepdims=k)),
    ("prod", lambda t, d, k: tensor.prod(t, d, k), lambda x, a, k: np.prod(x, a, keepdims=k)),
    ("var", lambda t, d, k: tensor.var(t, d, keepdim=k), lambda x, a, k: np.var(x, a, ddof=1, keepdims=k)),
    ("std", lambda t, d, k: tensor.std(t, d, keepdim=k), lambda x, a, k: np.std(x, a, ddof=1, keepdims=k)),
    ("logsumexp", lambda t, d, k: tensor.logsumexp(t, d, k), _np_logsumexp),
]
METHODS = {
    "sum": lambda t, d, k: t.sum(dim=d, keepdim=k),
    "mean": lambda t, d, k: t.mean(dim=d, keepdim=k),
    "prod": lambda t, d, k: t.prod(dim=d, keepdim=k),
    "var": lambda t, d, k: t.var(dim=d, keepdim=k),
    "std": lambda t, d, k: t.std(dim=d, keepdim=k),
    "logsumexp": lambda t, d, k: t.logsumexp(dim=d, keepdim=k),
}
RED_IDS = [c[0] for c in REDUCTIONS]
DIMS = [0, -1, 1, (0, 2), (-1, 0), (0, 1, 2)]


@pytest.mark.parametrize("name,call,ref", REDUCTIONS, ids=RED_IDS)
@pytest.mark.parametrize("dim", DIMS, ids=str)
@pytest.mark.parametrize("keepdim", [False, True], ids=["drop", "keep"])
def test_reduction_forward_matches_numpy(device, name, call, ref, dim, keepdim):
    x = X234.astype(np.float32)
    t = tensor.tensor(x, device=device)
    expected = ref(x, dim, keepdim).astype(np.float32)
    assert_close(call(t, dim, keepdim), expected)
    assert_close(METHODS[name](t, dim, keepdim), expected)


@pytest.mark.parametrize("name,call,ref", REDUCTIONS[:5], ids=RED_IDS[:5])
def test_full_reduction_matches_numpy(device, name, call, ref):
    x = X234.astype(np.float32)
    t = tensor.tensor(x, device=device)
    assert_close(call(t, None, False), np.asarray(ref(x, None, False), np.float32))
    assert_close(getattr(t, name)(), np.asarray(ref(x, None, False), np.float32))
    assert_close(call(t, None, True), ref(x, None, True).astype(np.float32))


@pytest.mark.parametrize("name,call,ref", REDUCTIONS, ids=RED_IDS)
def test_reduction_non_contiguous(device, name, call, ref):
    t = tensor.tensor(X234, device=device).transpose(0, 2)
    assert not t.is_contiguous()
    assert_close(call(t, (0, 1), False), ref(X234.transpose(2, 1, 0), (0, 1), False), rtol=1e-10)


GRAD_DIMS = [(1, False), (-1, True), ((0, 2), False), ((0, 1, 2), False)]


@pytest.mark.parametrize("name,call,ref", REDUCTIONS, ids=RED_IDS)
@pytest.mark.parametrize("dim,keepdim", GRAD_DIMS, ids=str)
def test_reduction_gradcheck(device, name, call, ref, dim, keepdim):
    x = tensor.tensor(X234, device=device, requires_grad=True)
    assert autograd.gradcheck(lambda a: call(a, dim, keepdim), x)


@pytest.mark.parametrize("name,call,ref", REDUCTIONS, ids=RED_IDS)
def test_reduction_gradgradcheck_and_non_contiguous_grad(device, name, call, ref):
    x = tensor.tensor(X234[:, :2, :3], device=device, requires_grad=True)
    assert autograd.gradgradcheck(lambda a: call(a, -1, False), x)
    assert autograd.gradcheck(lambda a: call(a.transpose(0, 2), 0, True), x)


TORCH_REDUCTIONS = [
    ("sum", lambda m, x: x.sum((0, 2))),
    ("sum_keep", lambda m, x: m.sum(x, -1, keepdim=True)),
    ("mean", lambda m, x: x.mean(1)),
    ("prod", lambda m, x: x.prod(1)),
    ("prod_with_zeros", lambda m, x: (x * (x.abs() > 0.5)).prod(-1)),
    ("var_correction0", lambda m, x: x.var(1, correction=0)),
    ("var_correction2", lambda m, x: m.var(x, (0, 2), correction=2)),
    ("var_unbiased_false", lambda m, x: x.var(-1, unbiased=False)),
    ("std", lambda m, x: x.std(0, keepdim=True)),
    ("std_unbiased", lambda m, x: m.std(x, 1, unbiased=True)),
    ("logsumexp", lambda m, x: m.logsumexp(x, (1, 2))),
    ("logsumexp_large", lambda m, x: (x * 1000).logsumexp(-1)),
]


@pytest.mark.parametrize("name,fn", TORCH_REDUCTIONS, ids=[c[0] for c in TORCH_REDUCTIONS])
def test_reduction_values_and_grads_match_torch(device, torch, name, fn):
    t = tensor.tensor(X234, device=device, requires_grad=True)
    p = torch.tensor(X234, requires_grad=True)
    ours, theirs = fn(tensor, t), fn(torch, p)
    assert_close(ours, theirs.detach().numpy(), rtol=1e-10)
    seed = RNG.standard_normal(theirs.shape)
    (g,) = autograd.grad(ours, t, tensor.tensor(seed, device=device))
    (tg,) = torch.autograd.grad(theirs, p, torch.tensor(seed))
    assert_close(g, tg.numpy(), rtol=1e-10)


# ---------------------------------------------------------------- prod with zeros

@pytest.mark.parametrize("values", [[[2.0, 0.0, 3.0], [1.5, -2.0, 0.5]], [[0.0, 0.0, 3.0], [0.0, 1.0, 2.0]]],
                         ids=["one_zero", "two_zeros"])
@pytest.mark.parametrize("dim", [None, 0, 1], ids=str)
def test_prod_with_zeros_gradient(device, torch, values, dim):
    x = np.array(values)
    t = tensor.tensor(x, device=device, requires_grad=True)
    p = torch.tensor(x, requires_grad=True)
    ours = t.prod() if dim is None else t.prod(dim)
    theirs = p.prod() if dim is None else p.prod(dim)
    assert_close(ours, theirs.detach().numpy())
    (g,) = autograd.grad(ours.sum(), t)
    (tg,) = torch.autograd.grad(theirs.sum(), p)
    assert_close(g, tg.numpy())
    assert autograd.gradcheck(lambda a: a.prod() if dim is None else a.prod(dim), t)


# ---------------------------------------------------------------- dtypes

# (input dtype, op, expected result dtype), as in PyTorch.
REDUCTION_DTYPES = [
    ("bool", "sum", "int64"), ("uint8", "sum", "int64"), ("int8", "sum", "int64"),
    ("int32", "sum", "int64"), ("float16", "sum", "float16"), ("float64", "sum", "float64"),
    ("bool", "prod", "int64"), ("int16", "prod", "int64"), ("float32", "prod", "float32"),
    ("float16", "mean", "float16"), ("float64", "var", "float64"), ("float32", "std", "float32"),
    ("int64", "logsumexp", "float32"), ("bool", "all", "bool"), ("float32", "any", "bool"),
    ("uint8", "all", "uint8"), ("uint8", "any", "uint8"),
]


@pytest.mark.parametrize("in_dtype,op,out_dtype", REDUCTION_DTYPES, ids=str)
def test_reduction_result_dtype(device, torch, in_dtype, op, out_dtype):
    x = np.array([[1, 0, 1], [1, 1, 1]]).astype(in_dtype)
    kwargs = {"dim": 1} if op == "logsumexp" else {}
    ours = getattr(tensor.tensor(x, device=device), op)(**kwargs)
    theirs = getattr(torch.tensor(x), op)(**kwargs)
    assert ours.dtype.name == out_dtype == str(theirs.dtype).removeprefix("torch.")
    assert_close(ours, theirs.numpy(), rtol=1e-3)


def test_sum_and_prod_dtype_argument(device):
    x = tensor.tensor([[1, 2], [3, 4]], device=device)
    assert_close(x.sum(dtype=tensor.float64), np.float64(10))
    assert_close(tensor.prod(x, 1, dtype=tensor.int32), np.array([2, 12], np.int32))
    assert_close(x.mean(dtype=tensor.float64), np.float64(2.5))


@pytest.mark.parametrize("op", ["mean", "var", "std"])
def test_integer_mean_var_std_raise(device, op):
    match = r"mean\(\): could not infer output dtype" if op == "mean" else "std and var only support floating"
    with pytest.raises(RuntimeError, match=match):
        getattr(tensor.tensor([1, 2], device=device), op)()


# ---------------------------------------------------------------- var / std

@pytest.mark.parametrize("kwargs,ddof", [({}, 1), ({"correction": 0}, 0), ({"correction": 2}, 2),
                                         ({"unbiased": True}, 1), ({"unbiased": False}, 0)], ids=str)
def test_var_std_correction(device, kwargs, ddof):
    t = tensor.tensor(X234, device=device)
    assert_close(t.var(1, **kwargs), np.var(X234, 1, ddof=ddof), rtol=1e-12)
    assert_close(tensor.std(t, (0, 2), **kwargs), np.std(X234, (0, 2), ddof=ddof), rtol=1e-12)


def test_var_single_element_is_nan_like_torch(device, torch):
    with np.errstate(all="ignore"), pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        ours = tensor.tensor([1.5], dtype=tensor.float64, device=device).var()
        theirs = torch.tensor([1.5], dtype=torch.float64).var()
    assert_close(ours, theirs.numpy())


# ---------------------------------------------------------------- logsumexp

LSE_CASES = [
    ("neg_inf_entry", [[0.0, -np.inf, 1.0], [2.0, 3.0, -np.inf]]),
    ("all_neg_inf_row", [[-np.inf, -np.inf, -np.inf], [1.0, 2.0, 3.0]]),
    ("pos_inf", [[np.inf, 0.0, 1.0], [1.0, 2.0, 3.0]]),
    ("large", [[1000.0, 1000.0, 999.0], [-1000.0, -1001.0, -999.0]]),
]


@pytest.mark.parametrize("name,values", LSE_CASES, ids=[c[0] for c in LSE_CASES])
def test_logsumexp_extreme_values_match_torch(device, torch, name, values):
    x = np.array(values)
    t = tensor.tensor(x, device=device, requires_grad=True)
    p = torch.tensor(x, requires_grad=True)
    with np.errstate(all="ignore"):
        ours = t.logsumexp(1)
        theirs = p.logsumexp(1)
        assert_close(ours, theirs.detach().numpy())
        assert np.isfinite(to_numpy(ours)).all() == (name in ("neg_inf_entry", "large"))
        (g,) = autograd.grad(ours[1], t)  # the finite row's gradient is the softmax of that row
    (tg,) = torch.autograd.grad(theirs[1], p)
    assert_close(g, tg.numpy())


# ---------------------------------------------------------------- all / any

BOOLS = np.array([[True, False, True], [True, True, True]])


@pytest.mark.parametrize("op", ["all", "any"])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (0, False), (-1, True), ((0, 1), False)], ids=str)
def test_all_any_match_numpy(device, op, dim, keepdim):
    ref = getattr(np, op)
    for x in (BOOLS, BOOLS * 2.5, BOOLS.astype(np.int64)):
        t = tensor.tensor(x, device=device)
        expected = np.asarray(ref(x, axis=dim, keepdims=keepdim))
        assert_close(getattr(tensor, op)(t, dim, keepdim), expected)
        assert_close(getattr(t, op)(dim=dim, keepdim=keepdim), expected)
    assert_close(getattr(tensor.tensor(BOOLS, device=device).T, op)(0), ref(BOOLS.T, 0))


def test_all_any_empty(device):
    e = tensor.zeros(0, 3, device=device)
    assert_close(e.all(), np.True_)
    assert_close(e.any(), np.False_)
    assert_close(e.any(0), np.zeros(3, bool))


# ---------------------------------------------------------------- empty and 0-d

def test_empty_reductions(device):
    e = tensor.zeros(0, 3, device=device)
    assert_close(e.sum(), np.float32(0))
    assert_close(e.sum(0), np.zeros(3, np.float32))
    assert_close(e.sum(1), np.zeros(0, np.float32))
    assert_close(e.prod(0), np.ones(3, np.float32))
    with np.errstate(all="ignore"):
        assert_close(e.mean(0), np.full(3, np.nan, np.float32))
    assert_close(tensor.logsumexp(e, 1), np.zeros(0, np.float32))


# torch's logsumexp needs a dim and its prod takes a single int dim: those pairs are left out.
ZERO_DIM_CASES = [
    (op, dim)
    for op in ["sum", "mean", "prod", "logsumexp", "all", "any", "amax", "amin"]
    for dim in [None, 0, -1, (), (0,)]
    if not (op == "logsumexp" and dim in (None, ())) and not (op == "prod" and isinstance(dim, tuple))
]


@pytest.mark.parametrize("op,dim", ZERO_DIM_CASES, ids=str)
def test_zero_dim_reductions(device, torch, op, dim):
    x = np.array(1.5)
    args = () if dim is None else (dim,)
    ours = getattr(tensor.tensor(x, device=device), op)(*args)
    theirs = getattr(torch.tensor(x), op)(*args)
    assert_close(ours, theirs.numpy())


def test_sum_over_empty_dim_list_reduces_everything(device, torch):
    t, p = tensor.tensor(X234, device=device), torch.tensor(X234)
    assert_close(t.sum(()), p.sum(()).numpy())
    assert_close(t.sum([]), p.sum([]).numpy())


# ---------------------------------------------------------------- dim errors

ALL_REDUCTIONS = ["sum", "mean", "prod", "var", "std", "logsumexp", "all", "any", "amax", "amin",
                  "argmax", "argmin", "max", "min"]


@pytest.mark.parametrize("op", ALL_REDUCTIONS)
@pytest.mark.parametrize("dim", [3, -4], ids=str)
def test_bad_dim_raises_index_error(device, op, dim):
    t = tensor.tensor(X234, device=device)
    with pytest.raises(IndexError, match=rf"Dimension out of range \(expected to be in range of \[-3, 2\], "
                                         rf"but got {dim}\)"):
        getattr(t, op)(dim)
    with pytest.raises(IndexError, match="Dimension out of range"):
        getattr(tensor, op)(t, dim)


def test_zero_dim_bad_dim_raises(device):
    with pytest.raises(IndexError, match=r"expected to be in range of \[-1, 0\], but got 1"):
        tensor.tensor(2.0, device=device).sum(1)


@pytest.mark.parametrize("op", ["sum", "mean", "var", "amax", "all"])
def test_repeated_dim_raises(device, op):
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        getattr(tensor.tensor(X234, device=device), op)((0, -3))


# ---------------------------------------------------------------- sum_to_size

@pytest.mark.parametrize("size", [(3, 1), (1, 1), (4,), (1, 3, 4), (2, 3, 4), (2, 1, 1), ()], ids=str)
def test_sum_to_size_matches_torch(device, torch, size):
    t = tensor.tensor(X234, device=device, requires_grad=True)
    expected = torch.tensor(X234).sum_to_size(size).numpy()
    assert_close(t.sum_to_size(size), expected)
    assert_close(tensor.sum_to_size(t, size), expected)
    if size:
        assert_close(t.sum_to_size(*size), expected)
    assert autograd.gradcheck(lambda a: a.sum_to_size(size), t)


def test_sum_to_size_bad_size_raises(device):
    t = tensor.tensor(X234, device=device)
    with pytest.raises(RuntimeError, match=r"size \{\[5, 4\]\} is not expandable to size \{\[2, 3, 4\]\}"):
        t.sum_to_size(5, 4)
    with pytest.raises(RuntimeError, match="is not expandable"):
        t.sum_to_size((1, 2, 3, 4))


# ---------------------------------------------------------------- complex inputs

Z34 = RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))
COMPLEX_REDUCTIONS = [
    ("mean", lambda m, z: z.mean(1)),
    ("mean_all", lambda m, z: m.mean(z)),
    ("var", lambda m, z: z.var(1)),
    ("var_correction0", lambda m, z: m.var(z, 0, correction=0)),
    ("std", lambda m, z: z.std()),
    ("std_keepdim", lambda m, z: m.std(z, 1, keepdim=True)),
    ("prod", lambda m, z: z.prod(1)),
    ("prod_with_zero", lambda m, z: (z * z.new_tensor([[1.0, 1, 0, 1], [1, 1, 1, 1], [0, 1, 0, 1]])).prod(1)),
]


@pytest.mark.parametrize("name,fn", COMPLEX_REDUCTIONS, ids=[c[0] for c in COMPLEX_REDUCTIONS])
def test_complex_reductions_match_torch(device, torch, name, fn):
    # var and std of complex input are real; gradients follow PyTorch's conjugate convention.
    t = tensor.tensor(Z34, device=device, requires_grad=True)
    p = torch.tensor(Z34, requires_grad=True)
    ours, theirs = fn(tensor, t), fn(torch, p)
    assert_close(ours, theirs.detach().numpy(), rtol=1e-10)
    seed = RNG.standard_normal(theirs.shape) * (1 - 0.5j if theirs.is_complex() else 1)
    (g,) = autograd.grad(ours, t, tensor.tensor(seed, device=device))
    (tg,) = torch.autograd.grad(theirs, p, torch.tensor(seed))
    assert_close(g, tg.resolve_conj().numpy(), rtol=1e-10)


# ---------------------------------------------------------------- std where it is 0

@pytest.mark.parametrize("fn", [lambda m, x: x.std(1), lambda m, x: m.std_mean(x, 1)[0],
                                lambda m, x: m.std(x, 1, correction=0, keepdim=True)],
                         ids=["std", "std_mean", "std_keepdim"])
def test_std_gradient_is_zero_where_std_is_zero(device, torch, fn):
    x = np.array([[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]])
    t = tensor.tensor(x, device=device, requires_grad=True)
    p = torch.tensor(x, requires_grad=True)
    fn(tensor, t).sum().backward()
    fn(torch, p).sum().backward()
    assert_close(t.grad, p.grad.numpy())
    assert to_numpy(t.grad)[0].tolist() == [0.0, 0.0, 0.0]


def test_std_double_backward_where_std_is_zero(device):
    t = tensor.tensor([[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]], dtype=tensor.float64, device=device, requires_grad=True)
    (g,) = autograd.grad(t.std(1).sum(), t, create_graph=True)
    (gg,) = autograd.grad((g * g).sum(), t)
    assert np.isfinite(to_numpy(gg)).all()
    assert autograd.gradgradcheck(lambda a: a.std(1), t[1:].detach().requires_grad_())


# ---------------------------------------------------------------- var / std legacy overloads

LEGACY_VAR_STD = [
    ("unbiased_positional", lambda m, x, op: getattr(m, op)(x, False)),
    ("dim_unbiased_keepdim", lambda m, x, op: getattr(m, op)(x, 1, False, True)),
    ("tuple_dim_unbiased", lambda m, x, op: getattr(m, op)(x, (0, 2), True)),
    ("method_unbiased", lambda m, x, op: getattr(x, op)(False)),
    ("method_dim_unbiased_keepdim", lambda m, x, op: getattr(x, op)(-1, False, True)),
    ("unbiased_keyword", lambda m, x, op: getattr(m, op)(x, dim=1, unbiased=False, keepdim=True)),
    ("correction_none", lambda m, x, op: getattr(x, op)(1, correction=None)),
]


@pytest.mark.parametrize("op", ["var", "std"])
@pytest.mark.parametrize("name,fn", LEGACY_VAR_STD, ids=[c[0] for c in LEGACY_VAR_STD])
def test_var_std_legacy_overloads_match_torch(device, torch, op, name, fn):
    ours = fn(tensor, tensor.tensor(X234, device=device), op)
    assert_close(ours, fn(torch, torch.tensor(X234), op).numpy(), rtol=1e-12)


@pytest.mark.parametrize("op", ["var", "std"])
def test_var_std_refuse_unbiased_with_correction(device, torch, op):
    for m, x in ((tensor, tensor.tensor(X234, device=device)), (torch, torch.tensor(X234))):
        with pytest.raises(TypeError):
            getattr(m, op)(x, 1, False, correction=0)
        with pytest.raises(TypeError):
            getattr(m, op)(x, 1, 0)  # unbiased must be a bool


# ---------------------------------------------------------------- logsumexp edge inputs

@pytest.mark.parametrize("values,dtype", [([1, 2, 3], "uint8"), ([True, False], "bool"), ([200, 7], "int64")],
                         ids=str)
def test_logsumexp_integer_and_bool_inputs_match_torch(device, torch, values, dtype):
    ours = tensor.logsumexp(tensor.tensor(np.array(values, dtype), device=device), 0)
    theirs = torch.logsumexp(torch.tensor(np.array(values, dtype)), 0)
    assert_close(ours, theirs.numpy())


def test_logsumexp_over_an_empty_dim_is_minus_inf(device, torch):
    for dim, keepdim in ((0, False), (0, True), ((0, 1), False)):
        ours = tensor.logsumexp(tensor.zeros(0, 3, device=device), dim, keepdim)
        assert_close(ours, torch.logsumexp(torch.zeros(0, 3), dim, keepdim).numpy())


# ---------------------------------------------------------------- all / any over no dims

@pytest.mark.parametrize("op", ["all", "any"])
@pytest.mark.parametrize("dim", [(), []], ids=str)
def test_all_any_over_an_empty_dim_list_reduce_nothing(device, torch, op, dim):
    x = np.array([[0.0, 2.0, 1.0], [1.0, 1.0, 0.0]])
    for dtype in ("float64", "uint8"):
        ours = getattr(tensor.tensor(x.astype(dtype), device=device), op)(dim=dim, keepdim=True)
        assert_close(ours, getattr(torch.tensor(x.astype(dtype)), op)(dim=dim, keepdim=True).numpy())
