"""Unary math, clamp, comparisons, logical ops, ``where`` and ``clone``.

Forward values, dtypes and shapes are checked against numpy on every device (function and
method forms; non-contiguous, empty and 0-d inputs), gradients with float64 ``gradcheck``
(``gradgradcheck`` for a subset), and values and gradients against torch.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import autograd
import tensor
from tests.helpers import assert_close, to_numpy

RNG = np.random.default_rng(11)


def _values(shape, domain):
    if domain == "positive":
        return RNG.uniform(0.5, 2.0, shape)
    if domain == "away0":
        return RNG.uniform(0.5, 2.0, shape) * RNG.choice([-1.0, 1.0], shape)
    return RNG.uniform(-2.0, 2.0, shape)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


# (name, numpy reference, input domain, has a gradient, keeps integer dtypes)
UNARY_CASES = [
    ("neg", np.negative, "any", True, True),
    ("abs", np.abs, "away0", True, True),
    ("exp", np.exp, "any", True, False),
    ("log", np.log, "positive", True, False),
    ("sqrt", np.sqrt, "positive", True, False),
    ("rsqrt", lambda x: 1 / np.sqrt(x), "positive", True, False),
    ("sin", np.sin, "any", True, False),
    ("cos", np.cos, "any", True, False),
    ("tanh", np.tanh, "any", True, False),
    ("sigmoid", _sigmoid, "any", True, False),
    ("relu", lambda x: np.maximum(x, 0).astype(x.dtype), "away0", True, True),
    ("log1p", np.log1p, "positive", True, False),
    ("expm1", np.expm1, "any", True, False),
    ("reciprocal", np.reciprocal, "away0", True, False),
    ("sign", np.sign, "away0", True, True),
]
UNARY_IDS = [c[0] for c in UNARY_CASES]
GRADGRAD = {"exp", "log", "sqrt", "rsqrt", "sin", "tanh", "sigmoid", "reciprocal", "log1p", "abs"}


@pytest.mark.parametrize("name,ref,domain,grad,keeps_int", UNARY_CASES, ids=UNARY_IDS)
@pytest.mark.parametrize("shape", [(2, 3), (), (0, 3)], ids=str)
def test_unary_forward_matches_numpy(device, name, ref, domain, grad, keeps_int, shape):
    x = _values(shape, domain).astype(np.float32)
    t = tensor.tensor(x, device=device)
    expected = ref(x)
    assert_close(getattr(tensor, name)(t), expected)
    assert_close(getattr(t, name)(), expected)


@pytest.mark.parametrize("name,ref,domain,grad,keeps_int", UNARY_CASES, ids=UNARY_IDS)
def test_unary_non_contiguous_float64(device, name, ref, domain, grad, keeps_int):
    x = _values((3, 4), domain)
    t = tensor.tensor(x, device=device).T
    assert not t.is_contiguous()
    assert_close(getattr(tensor, name)(t), ref(x.T), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name,ref,domain,grad,keeps_int", UNARY_CASES, ids=UNARY_IDS)
def test_unary_integer_input_dtype_matches_torch(device, torch, name, ref, domain, grad, keeps_int):
    x = np.array([[1, 2], [3, 4]])
    ours = getattr(tensor, name)(tensor.tensor(x, device=device))
    theirs = getattr(torch, name)(torch.tensor(x))
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    assert ours.dtype.name == ("int64" if keeps_int else "float32")
    assert_close(ours, theirs.numpy())


@pytest.mark.parametrize("name,ref,domain,grad,keeps_int", UNARY_CASES, ids=UNARY_IDS)
def test_unary_gradcheck(device, name, ref, domain, grad, keeps_int):
    fn = getattr(tensor, name)
    x = tensor.tensor(_values((2, 3), domain), device=device, requires_grad=True)
    assert autograd.gradcheck(fn, x)
    if name in GRADGRAD:
        assert autograd.gradgradcheck(fn, x)


@pytest.mark.parametrize("name,ref,domain,grad,keeps_int", UNARY_CASES, ids=UNARY_IDS)
def test_unary_values_and_grads_match_torch(device, torch, name, ref, domain, grad, keeps_int):
    # Zeros included where the op is defined there: the subgradient conventions must agree.
    x = np.array([-1.5, -0.5, 0.0, 0.5, 2.0]) if domain != "positive" else np.array([0.25, 1.0, 3.0])
    if name == "reciprocal":
        x = x[x != 0]
    t = tensor.tensor(x, device=device, requires_grad=True)
    p = torch.tensor(x, requires_grad=True)
    ours, theirs = getattr(tensor, name)(t), getattr(torch, name)(p)
    assert_close(ours, theirs.detach().numpy())
    (g,) = autograd.grad(ours.sum(), t)
    (tg,) = torch.autograd.grad(theirs.sum(), p)
    assert_close(g, tg.numpy())


@pytest.mark.parametrize("dtype", [tensor.float32, tensor.float64])
def test_sigmoid_large_inputs_do_not_overflow(device, dtype):
    x = tensor.tensor([-1000.0, -100.0, 0.0, 100.0, 1000.0], dtype=dtype, device=device, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's overflow RuntimeWarning would fail the test
        y = x.sigmoid()
        (g,) = autograd.grad(y.sum(), x)
    expected = np.array([0.0, np.exp(-100.0), 0.5, 1.0, 1.0])
    assert_close(y, expected.astype(dtype.numpy), rtol=1e-6, atol=0)
    assert np.isfinite(to_numpy(g)).all()
    assert to_numpy(g)[2] == 0.25


# ---------------------------------------------------------------- clamp

# (name, kwargs, numpy reference)
CLAMP_CASES = [
    ("min_only", {"min": -0.5}, lambda x: np.maximum(x, -0.5)),
    ("max_only", {"max": 0.5}, lambda x: np.minimum(x, 0.5)),
    ("both", {"min": -0.5, "max": 0.5}, lambda x: np.clip(x, -0.5, 0.5)),
    ("min_above_max", {"min": 1.0, "max": -1.0}, lambda x: np.full_like(x, -1.0)),
]


@pytest.mark.parametrize("name,kwargs,ref", CLAMP_CASES, ids=[c[0] for c in CLAMP_CASES])
def test_clamp_forward_and_gradcheck(device, name, kwargs, ref):
    x = np.array([[-2.0, -0.7, -0.3], [0.2, 0.6, 1.9]])
    t = tensor.tensor(x, device=device)
    assert_close(tensor.clamp(t, **kwargs), ref(x))
    assert_close(t.clamp(**kwargs), ref(x))
    assert_close(t.clip(**kwargs), ref(x))
    assert_close(tensor.clamp(t.T, **kwargs), ref(x.T))
    x_leaf = tensor.tensor(x, device=device, requires_grad=True)
    assert autograd.gradcheck(lambda a: tensor.clamp(a, **kwargs), x_leaf)


def test_clamp_gradient_at_the_bounds_matches_torch(device, torch):
    x = np.array([-1.0, -0.5, 0.0, 0.5, 1.0])
    t = tensor.tensor(x, device=device, requires_grad=True)
    p = torch.tensor(x, requires_grad=True)
    (g,) = autograd.grad(t.clamp(-0.5, 0.5).sum(), t)
    (tg,) = torch.autograd.grad(p.clamp(-0.5, 0.5).sum(), p)
    assert_close(g, tg.numpy())


def test_clamp_dtypes_match_torch(device, torch):
    x = np.array([1, 5, 9])
    for kwargs in ({"min": 2}, {"max": 3}, {"min": 2, "max": 6}, {"min": 2.5}, {"max": 7.5}):
        ours, theirs = tensor.tensor(x, device=device).clamp(**kwargs), torch.tensor(x).clamp(**kwargs)
        assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
        assert_close(ours, theirs.numpy())


def test_clamp_without_bounds_raises(device):
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        tensor.clamp(tensor.ones(2, device=device))


# ---------------------------------------------------------------- comparisons and logic

# (name, numpy reference, operator form or None)
COMPARISONS = [
    ("eq", np.equal, lambda a, b: a == b),
    ("ne", np.not_equal, lambda a, b: a != b),
    ("lt", np.less, lambda a, b: a < b),
    ("le", np.less_equal, lambda a, b: a <= b),
    ("gt", np.greater, lambda a, b: a > b),
    ("ge", np.greater_equal, lambda a, b: a >= b),
]
CMP_A = np.array([[1.0, 2.0, 3.0], [4.0, 2.0, 0.0]])
CMP_B = np.array([2.0, 2.0, 1.0])


@pytest.mark.parametrize("name,ref,op", COMPARISONS, ids=[c[0] for c in COMPARISONS])
def test_comparisons_match_numpy(device, name, ref, op):
    a, b = tensor.tensor(CMP_A, device=device), tensor.tensor(CMP_B, device=device)
    expected = ref(CMP_A, CMP_B)
    for out in (getattr(tensor, name)(a, b), getattr(a, name)(b), op(a, b)):
        assert_close(out, expected)
    assert_close(op(a, 2), ref(CMP_A, 2))  # Python scalar
    assert_close(op(2, a), ref(2, CMP_A))  # reflected
    assert_close(op(a.T, b[:2]), ref(CMP_A.T, CMP_B[:2]))  # non-contiguous, broadcast
    assert_close(op(a.long(), b), ref(CMP_A, CMP_B))  # mixed dtypes compare by value
    assert_close(op(a[:0], b), ref(CMP_A[:0], CMP_B))  # empty
    assert_close(op(a[0, 0], b[0]), ref(CMP_A[0, 0], CMP_B[0]))  # 0-d


def test_comparison_result_does_not_require_grad(device):
    a = tensor.tensor([1.0, 2.0], device=device, requires_grad=True)
    assert not (a > 1).requires_grad
    assert (a > 1).dtype is tensor.bool


LOGICAL = [
    ("logical_and", np.logical_and),
    ("logical_or", np.logical_or),
    ("logical_xor", np.logical_xor),
]
LOGIC_A = np.array([[0.0, 1.5, -2.0], [0.0, 0.0, 3.0]])
LOGIC_B = np.array([0, 1, 0])


@pytest.mark.parametrize("name,ref", LOGICAL, ids=[c[0] for c in LOGICAL])
def test_logical_binary_ops_match_numpy(device, name, ref):
    a, b = tensor.tensor(LOGIC_A, device=device), tensor.tensor(LOGIC_B, device=device)
    expected = ref(LOGIC_A, LOGIC_B)
    assert_close(getattr(tensor, name)(a, b), expected)
    assert_close(getattr(a, name)(b), expected)
    assert_close(getattr(tensor, name)(a.bool(), b.bool()), expected)
    assert_close(getattr(tensor, name)(a.T, b[:2]), ref(LOGIC_A.T, LOGIC_B[:2]))


def test_logical_not_matches_numpy(device):
    a = tensor.tensor(LOGIC_A, device=device)
    assert_close(tensor.logical_not(a), np.logical_not(LOGIC_A))
    assert_close(a.long().logical_not(), np.logical_not(LOGIC_A))
    assert_close(~a.bool(), np.logical_not(LOGIC_A))
    assert_close(tensor.logical_not(a[0, 0]), np.logical_not(LOGIC_A[0, 0]))


# ---------------------------------------------------------------- where

COND = np.array([[True, False, True], [False, True, False]])
WHERE_X = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
WHERE_Y = np.array([-1.0, -2.0, -3.0])

# (name, our call, numpy reference): tensors, scalars on either side, broadcasting.
WHERE_CASES = [
    ("tensors", lambda c, x, y: tensor.where(c, x, y), lambda: np.where(COND, WHERE_X, WHERE_Y)),
    ("scalar_other", lambda c, x, y: tensor.where(c, x, 0.0), lambda: np.where(COND, WHERE_X, 0.0)),
    ("scalar_input", lambda c, x, y: tensor.where(c, 7.0, y), lambda: np.where(COND, 7.0, WHERE_Y)),
    ("broadcast_cond", lambda c, x, y: tensor.where(c[0], x, y), lambda: np.where(COND[0], WHERE_X, WHERE_Y)),
    ("non_contiguous", lambda c, x, y: tensor.where(c.T, x.T, y[:2]),
     lambda: np.where(COND.T, WHERE_X.T, WHERE_Y[:2])),
]


@pytest.mark.parametrize("name,call,ref", WHERE_CASES, ids=[c[0] for c in WHERE_CASES])
def test_where_forward_and_gradcheck(device, name, call, ref):
    c = tensor.tensor(COND, device=device)
    x = tensor.tensor(WHERE_X, device=device, requires_grad=True)
    y = tensor.tensor(WHERE_Y, device=device, requires_grad=True)
    assert_close(call(c, x, y), ref())
    assert autograd.gradcheck(lambda a, b: call(c, a, b), (x, y))


def test_where_with_two_scalars_and_empty(device):
    c = tensor.tensor(COND, device=device)
    assert_close(tensor.where(c, 1.0, 0.0), np.where(COND, 1.0, 0.0).astype(np.float32))
    assert_close(tensor.where(c, 1, 0), np.where(COND, 1, 0))
    empty = tensor.zeros(0, 3, device=device)
    assert_close(tensor.where(empty > 0, empty, 1.0), np.zeros((0, 3), np.float32))


def test_where_dtypes_match_torch(device, torch):
    cases = [(np.array([1, 2]), 2.5), (np.array([1, 2]), 2), (np.array([1.0, 2.0], np.float16), 3),
             (np.array([1, 2], np.int8), np.array([3], np.int16)), (np.array([True, False]), 1)]
    c = np.array([True, False])
    for x, y in cases:
        ours_y = tensor.tensor(y, device=device) if isinstance(y, np.ndarray) else y
        theirs_y = torch.tensor(y) if isinstance(y, np.ndarray) else y
        ours = tensor.where(tensor.tensor(c, device=device), tensor.tensor(x, device=device), ours_y)
        theirs = torch.where(torch.tensor(c), torch.tensor(x), theirs_y)
        assert_close(ours, theirs.numpy())


def test_where_non_bool_condition_raises(device):
    x = tensor.ones(2, device=device)
    with pytest.raises(RuntimeError, match="where expected condition to be a boolean tensor"):
        tensor.where(x, x, x)


# ---------------------------------------------------------------- clone

@pytest.mark.parametrize("shape", [(2, 3), (), (0, 2)], ids=str)
def test_clone_copies_values_and_storage(device, shape):
    x = tensor.tensor(_values(shape, "any"), device=device)
    c = x.clone()
    assert_close(c, to_numpy(x))
    if x.numel():
        c.fill_(0.0)
        assert not (to_numpy(x) == 0).any()


def test_clone_of_non_contiguous_and_int(device):
    x = tensor.tensor(np.arange(6).reshape(2, 3), device=device)
    assert_close(tensor.clone(x.T), np.arange(6).reshape(2, 3).T)


def test_clone_passes_gradients(device):
    x = tensor.tensor(_values((2, 3), "any"), device=device, requires_grad=True)
    assert autograd.gradcheck(lambda a: a.clone() * a, x)
    assert autograd.gradgradcheck(lambda a: a.clone() * a, x)


# ---------------------------------------------------------------- complex inputs

COMPLEX_UNARY = ["exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tan",
                 "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sigmoid",
                 "reciprocal", "sinc"]
# Points in all four quadrants; -0.5+0.3j puts acosh's derivative on the branch 1/sqrt(z**2 - 1) misses.
COMPLEX_RE, COMPLEX_IM = np.array([1.0, 2.0, -0.5, 0.3]), np.array([1.0, -1.0, 0.3, -2.0])


def _complex_values_and_grads(lib, name, device=None):
    """``f(re + i im)`` as real pairs, and the gradients of a real loss of it w.r.t. re and im."""
    kwargs = {} if device is None else {"device": device}
    re = lib.tensor(COMPLEX_RE, requires_grad=True, **kwargs)
    im = lib.tensor(COMPLEX_IM, requires_grad=True, **kwargs)
    out = lib.view_as_real(getattr(lib, name)(lib.complex(re, im)))
    loss = (out * lib.tensor([0.7, -1.3], dtype=lib.float64, **kwargs)).sum()
    loss.backward()
    return out.detach().numpy() if lib is not tensor else to_numpy(out), re.grad, im.grad


@pytest.mark.parametrize("name", COMPLEX_UNARY)
def test_complex_unary_values_and_grads_match_torch(device, torch, name):
    """Values in complex, and gradients by PyTorch's convention g * conj(f'(z))."""
    ours, re_grad, im_grad = _complex_values_and_grads(tensor, name, device)
    theirs, their_re_grad, their_im_grad = _complex_values_and_grads(torch, name)
    assert_close(ours, theirs, rtol=1e-10, atol=1e-12)
    assert_close(re_grad, their_re_grad.numpy(), rtol=1e-10, atol=1e-12)
    assert_close(im_grad, their_im_grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["exp", "sqrt", "sigmoid", "tanh", "log"])
def test_complex64_unary_stays_complex64_in_every_form(device, name):
    z = np.array([1 + 1j, -4 + 0j], np.complex64)
    expected = (_sigmoid if name == "sigmoid" else getattr(np, name))(z)
    t = tensor.tensor(z, device=device)
    assert_close(getattr(tensor, name)(t), expected)
    assert_close(getattr(t, name)(), expected)
    assert_close(getattr(t.clone(), name + "_")(), expected)


def test_deg2rad_of_complex_raises_runtime_error(device):
    for name in ("deg2rad", "rad2deg"):
        with pytest.raises(RuntimeError, match="not supported for complex tensors"):
            getattr(tensor, name)(tensor.tensor([1j], device=device))


# ---------------------------------------------------------------- bool edge cases


def test_bool_sign_square_and_neg_match_torch(device, torch):
    b = np.array([True, False])
    assert_close(tensor.sign(tensor.tensor(b, device=device)), torch.sign(torch.tensor(b)).numpy())
    assert_close(tensor.sgn(tensor.tensor(b, device=device)), torch.sgn(torch.tensor(b)).numpy())
    assert_close(tensor.square(tensor.tensor(b, device=device)), torch.square(torch.tensor(b)).numpy())
    for negate in (tensor.neg, lambda t: -t):
        with pytest.raises(RuntimeError, match="Negation, the `-` operator, on a bool tensor"):
            negate(tensor.tensor(b, device=device))


# ---------------------------------------------------------------- clamp and where: more dtypes


def test_clamp_keeps_bfloat16_and_promotes_tensor_bounds_as_torch(device, torch):
    cases = [
        (lambda m: m.tensor([0.1, 2.0], dtype=m.bfloat16), {"min": 0.5}),
        (lambda m: m.tensor([0.1, 2.0], dtype=m.bfloat16), {"min": 0.5, "max": 1.5}),
        (lambda m: m.tensor([1, 5]), {"min": lambda m: m.tensor([2.0])}),
        (lambda m: m.tensor([1.0, 5.0]), {"min": lambda m: m.tensor(2.0, dtype=m.float64)}),
        (lambda m: m.tensor([1, 5], dtype=m.uint8), {"min": lambda m: m.tensor([2.0], dtype=m.float16)}),
        (lambda m: m.tensor([1, 5]), {"min": lambda m: m.tensor([2], dtype=m.int8),
                                      "max": lambda m: m.tensor([4.0], dtype=m.float64)}),
    ]
    for make, bounds in cases:
        results = []
        for lib in (tensor, torch):
            kwargs = {k: v(lib) if callable(v) else v for k, v in bounds.items()}
            results.append(make(lib).clamp(**kwargs).float())
        ours, theirs = results
        assert str(ours.dtype) == str(theirs.dtype).replace("torch", "tensor")
        assert_close(ours, theirs.numpy())
    assert tensor.clamp_min(tensor.tensor([1.0], dtype=tensor.bfloat16), 2.5).dtype is tensor.bfloat16


def test_where_with_the_condition_alone_is_nonzero_as_tuple(device, torch):
    x = np.array([[0, 1], [1, 0]])
    ours = tensor.where(tensor.tensor(x, device=device) > 0)
    theirs = torch.where(torch.tensor(x) > 0)
    assert len(ours) == len(theirs) == 2
    for o, t in zip(ours, theirs):
        assert_close(o, t.numpy())
    assert_close(tensor.where(tensor.tensor(x, device=device))[1], np.array([1, 0]))
