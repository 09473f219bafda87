"""Binary elementwise arithmetic and the Python operators.

Forward values, dtypes and shapes are checked against numpy on every device (function,
method and operator forms; broadcasting, non-contiguous, empty and 0-d inputs), gradients
with float64 ``gradcheck`` (``gradgradcheck`` for a subset), and a table against torch.
"""

from __future__ import annotations

import numpy as np
import pytest

import autograd
import tensor
from tests.helpers import assert_close, to_numpy

RNG = np.random.default_rng(7)


def _values(shape, domain):
    """Random float64 values in a domain that keeps each op smooth and well defined."""
    if domain == "positive":
        return RNG.uniform(0.5, 2.0, shape)
    if domain == "away0":  # |x| in [0.5, 2], either sign: safe divisors
        return RNG.uniform(0.5, 2.0, shape) * RNG.choice([-1.0, 1.0], shape)
    return RNG.uniform(-2.0, 2.0, shape)


# (name, function, numpy reference, domain of a, domain of b)
BINARY_CASES = [
    ("add", tensor.add, np.add, "any", "any"),
    ("sub", tensor.sub, np.subtract, "any", "any"),
    ("mul", tensor.mul, np.multiply, "any", "any"),
    ("div", tensor.div, np.divide, "any", "away0"),
    ("pow", tensor.pow, np.power, "positive", "any"),
    ("maximum", tensor.maximum, np.maximum, "any", "any"),
    ("minimum", tensor.minimum, np.minimum, "any", "any"),
    ("remainder", tensor.remainder, np.remainder, "any", "away0"),
    ("floor_divide", tensor.floor_divide, np.floor_divide, "any", "away0"),
]
BINARY_IDS = [c[0] for c in BINARY_CASES]

# (a shape, b shape): equal, broadcast both ways, 0-d on either side, empty.
SHAPE_PAIRS = [
    ((2, 3), (2, 3)),
    ((2, 3), (3,)),
    ((4, 1, 3), (2, 1)),
    ((), (2, 3)),
    ((2, 3), ()),
    ((), ()),
    ((0, 3), (3,)),
    ((0, 3), (1, 3)),
]


@pytest.mark.parametrize("name,fn,ref,dom_a,dom_b", BINARY_CASES, ids=BINARY_IDS)
@pytest.mark.parametrize("shapes", SHAPE_PAIRS, ids=str)
def test_binary_forward_matches_numpy(device, name, fn, ref, dom_a, dom_b, shapes):
    a = _values(shapes[0], dom_a).astype(np.float32)
    b = _values(shapes[1], dom_b).astype(np.float32)
    ta, tb = tensor.tensor(a, device=device), tensor.tensor(b, device=device)
    expected = ref(a, b)
    assert_close(fn(ta, tb), expected)
    assert_close(getattr(ta, name)(tb), expected)  # method form


@pytest.mark.parametrize("name,fn,ref,dom_a,dom_b", BINARY_CASES, ids=BINARY_IDS)
def test_binary_non_contiguous_input(device, name, fn, ref, dom_a, dom_b):
    a = _values((3, 2), dom_a)
    b = _values((2, 3), dom_b)
    ta = tensor.tensor(a, device=device).T
    assert not ta.is_contiguous()
    assert_close(fn(ta, tensor.tensor(b, device=device)), ref(a.T, b))


@pytest.mark.parametrize("name,fn,ref,dom_a,dom_b", BINARY_CASES, ids=BINARY_IDS)
@pytest.mark.parametrize("scalar", [2, -1.5], ids=["int", "float"])
def test_binary_with_python_scalar(device, name, fn, ref, dom_a, dom_b, scalar):
    if name == "pow":
        scalar = abs(scalar)
    a = _values((2, 3), dom_a).astype(np.float32)
    assert_close(fn(tensor.tensor(a, device=device), scalar), ref(a, np.float32(scalar)))


GRAD_SHAPE_PAIRS = [((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((), (2, 2))]


@pytest.mark.parametrize("name,fn,ref,dom_a,dom_b", BINARY_CASES, ids=BINARY_IDS)
@pytest.mark.parametrize("shapes", GRAD_SHAPE_PAIRS, ids=str)
def test_binary_gradcheck(device, name, fn, ref, dom_a, dom_b, shapes):
    a = tensor.tensor(_values(shapes[0], dom_a), device=device, requires_grad=True)
    b = tensor.tensor(_values(shapes[1], dom_b), device=device, requires_grad=True)
    assert autograd.gradcheck(fn, (a, b))


@pytest.mark.parametrize("name,fn,ref,dom_a,dom_b", BINARY_CASES, ids=BINARY_IDS)
def test_binary_gradcheck_non_contiguous(device, name, fn, ref, dom_a, dom_b):
    a = tensor.tensor(_values((3, 2), dom_a), device=device, requires_grad=True)
    b = tensor.tensor(_values((2, 3), dom_b), device=device, requires_grad=True)
    assert autograd.gradcheck(lambda x, y: fn(x.T, y), (a, b))


@pytest.mark.parametrize("name", ["mul", "div", "pow", "maximum", "sub"])
def test_binary_gradgradcheck(device, name):
    fn, _, dom_a, dom_b = next(c[1:] for c in BINARY_CASES if c[0] == name)
    a = tensor.tensor(_values((2, 3), dom_a), device=device, requires_grad=True)
    b = tensor.tensor(_values((3,), dom_b), device=device, requires_grad=True)
    assert autograd.gradgradcheck(fn, (a, b))


def test_add_sub_alpha(device):
    a, b = _values((2, 3), "any"), _values((2, 3), "any")
    ta, tb = tensor.tensor(a, device=device), tensor.tensor(b, device=device)
    assert_close(tensor.add(ta, tb, alpha=2), a + 2 * b)
    assert_close(ta.sub(tb, alpha=-3), a + 3 * b)


# ---------------------------------------------------------------- division and rounding

DIV_A = np.array([-7, -6, -1, 0, 1, 6, 7])
DIV_B = np.array([2, -2, 3, -3, 4, 2, -4])


@pytest.mark.parametrize("dtype", ["int64", "int32", "float32", "float64"])
@pytest.mark.parametrize("mode", [None, "floor", "trunc"])
def test_div_rounding_modes(device, dtype, mode):
    a, b = DIV_A.astype(dtype), DIV_B.astype(dtype)
    out = tensor.div(tensor.tensor(a, device=device), tensor.tensor(b, device=device), rounding_mode=mode)
    if mode is None:
        expected_dtype = np.float32 if dtype.startswith("int") else dtype
        expected = (a / b).astype(expected_dtype)
    elif mode == "floor":
        expected = np.floor_divide(a, b)
    else:
        expected = np.trunc(a / b).astype(dtype)
    assert_close(out, expected)


def test_div_trunc_is_exact_for_large_integers(device):
    a = np.array([2**24 + 1, -(2**53) - 3, 2**62 + 5])
    out = tensor.tensor(a, device=device).div(3, rounding_mode="trunc")
    assert to_numpy(out).tolist() == [x // 3 if x >= 0 else -(-x // 3) for x in a.tolist()]
    assert_close(tensor.div(tensor.tensor(a, device=device), 1, rounding_mode="trunc"), a)


def test_div_rounding_mode_has_zero_gradient(device):
    x = tensor.tensor([1.5, -2.5, 3.0], dtype=tensor.float64, device=device, requires_grad=True)
    for mode in ("floor", "trunc"):
        (g,) = autograd.grad(tensor.div(x, 2, rounding_mode=mode).sum(), x)
        assert_close(g, np.zeros(3))


def test_div_rounding_mode_bad_value_raises(device):
    x = tensor.ones(3, device=device)
    msg = "rounding_mode to be one of None, 'trunc', or 'floor' but found 'up'"
    with pytest.raises(RuntimeError, match=msg):
        tensor.div(x, 2, rounding_mode="up")


def test_remainder_and_floor_divide_follow_the_divisor_sign(device):
    a, b = tensor.tensor(DIV_A, device=device), tensor.tensor(DIV_B, device=device)
    assert_close(a % b, np.remainder(DIV_A, DIV_B))
    assert_close(a // b, np.floor_divide(DIV_A, DIV_B))
    assert_close(tensor.remainder(a.double(), b.double()), np.remainder(DIV_A, DIV_B).astype(float))


# ---------------------------------------------------------------- pow

EXPONENTS = np.array([2.0, 0.5, -1.0])

# (name, expression on our tensors, the same on numpy arrays)
POW_CASES = [
    ("tensor_exp", lambda x: x ** tensor.tensor(EXPONENTS, device=x.device), lambda x: x ** EXPONENTS),
    ("square", lambda x: x ** 2, lambda x: x ** 2),
    ("sqrt", lambda x: x ** 0.5, lambda x: x ** 0.5),
    ("inverse", lambda x: x ** -1, lambda x: x ** -1.0),
    ("zero", lambda x: x ** 0, lambda x: x ** 0),
    ("scalar_base", lambda x: 2 ** x, lambda x: 2 ** x),
    ("method", lambda x: x.pow(3), lambda x: x ** 3),
    ("function", lambda x: tensor.pow(x, 1.5), lambda x: x ** 1.5),
]


@pytest.mark.parametrize("name,fn,ref", POW_CASES, ids=[c[0] for c in POW_CASES])
def test_pow_forward_and_gradcheck(device, name, fn, ref):
    x = np.array([0.5, 1.5, 2.0])
    assert_close(fn(tensor.tensor(x, device=device)), ref(x))
    assert autograd.gradcheck(fn, tensor.tensor(x, device=device, requires_grad=True))
    assert autograd.gradgradcheck(fn, tensor.tensor(x, device=device, requires_grad=True))


def test_pow_gradient_at_zero_base_matches_torch(device, torch):
    x = tensor.tensor([0.0, 1.0, 2.0], dtype=tensor.float64, device=device, requires_grad=True)
    e = tensor.tensor([0.0, 2.0, 0.0], dtype=tensor.float64, device=device, requires_grad=True)
    tx = torch.tensor([0.0, 1.0, 2.0], dtype=torch.float64, requires_grad=True)
    te = torch.tensor([0.0, 2.0, 0.0], dtype=torch.float64, requires_grad=True)
    with np.errstate(all="ignore"):
        for ours, theirs in [((x ** e), (tx ** te)), (x ** 0, tx ** 0), (0 ** e, 0 ** te)]:
            ours_grads = autograd.grad(ours.sum(), [x, e], allow_unused=True, materialize_grads=True)
            theirs_grads = torch.autograd.grad(theirs.sum(), [tx, te], allow_unused=True,
                                               materialize_grads=True)
            for g, tg in zip(ours_grads, theirs_grads):
                assert_close(g, tg.numpy())


def test_integer_pow_negative_exponent_raises(device):
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        tensor.tensor([1, 2], device=device) ** -1


# ---------------------------------------------------------------- maximum / minimum ties

def test_maximum_minimum_ties_share_the_gradient(device):
    a = tensor.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    b = tensor.tensor([1.0, 0.0, 5.0], device=device, requires_grad=True)
    ga, gb = autograd.grad(tensor.maximum(a, b).sum(), [a, b])
    assert_close(ga, np.array([0.5, 1.0, 0.0], np.float32))
    assert_close(gb, np.array([0.5, 0.0, 1.0], np.float32))
    ga, gb = autograd.grad(tensor.minimum(a, b).sum(), [a, b])
    assert_close(ga, np.array([0.5, 0.0, 1.0], np.float32))
    assert_close(gb, np.array([0.5, 1.0, 0.0], np.float32))


# ---------------------------------------------------------------- torch oracle

TORCH_BINARY = [
    ("add", lambda m, a, b: m.add(a, b, alpha=2)),
    ("sub", lambda m, a, b: m.sub(a, b)),
    ("mul", lambda m, a, b: a * b),
    ("div", lambda m, a, b: a / b),
    ("pow", lambda m, a, b: a.abs() ** b),
    ("maximum_ties", lambda m, a, b: m.maximum(a, a.round())),
    ("minimum", lambda m, a, b: m.minimum(a, b)),
    ("remainder", lambda m, a, b: m.remainder(a, b)),
    ("div_floor", lambda m, a, b: m.div(a, b, rounding_mode="floor") * a),
    ("div_trunc", lambda m, a, b: m.div(a, b, rounding_mode="trunc") + a),
    ("rsub", lambda m, a, b: 2 - a * b),
    ("rdiv", lambda m, a, b: 2 / b),
    ("rpow", lambda m, a, b: 2 ** a),
]


@pytest.mark.parametrize("name,fn", TORCH_BINARY, ids=[c[0] for c in TORCH_BINARY])
def test_binary_values_and_grads_match_torch(device, torch, name, fn):
    a = np.array([[0.5, -1.0, 2.0], [1.5, -2.5, 3.0]])
    b = np.array([1.5, -0.75, 2.0])
    ta = tensor.tensor(a, device=device, requires_grad=True)
    tb = tensor.tensor(b, device=device, requires_grad=True)
    pa = torch.tensor(a, requires_grad=True)
    pb = torch.tensor(b, requires_grad=True)
    ours, theirs = fn(tensor, ta, tb), fn(torch, pa, pb)
    assert_close(ours, theirs.detach().numpy())
    seed = RNG.standard_normal(theirs.shape)
    ours_grads = autograd.grad(ours, [ta, tb], tensor.tensor(seed, device=device), allow_unused=True,
                               materialize_grads=True)
    theirs_grads = torch.autograd.grad(theirs, [pa, pb], torch.tensor(seed), allow_unused=True,
                                       materialize_grads=True)
    for g, tg in zip(ours_grads, theirs_grads):
        assert_close(g, tg.numpy())


# ---------------------------------------------------------------- Python operators

# (name, expression): each works the same on numpy arrays, which are the reference.
OPERATOR_CASES = [
    ("add", lambda x: x + 2), ("radd", lambda x: 2 + x),
    ("sub", lambda x: x - 2), ("rsub", lambda x: 2 - x),
    ("mul", lambda x: x * 3), ("rmul", lambda x: 3 * x),
    ("truediv", lambda x: x / 4), ("rtruediv", lambda x: 2 / x),
    ("floordiv", lambda x: x // 2), ("rfloordiv", lambda x: 7 // x),
    ("mod", lambda x: x % 2), ("rmod", lambda x: 7 % x),
    ("pow", lambda x: x ** 2), ("rpow", lambda x: 2 ** x),
    ("neg", lambda x: -x), ("pos", lambda x: +x), ("abs", lambda x: abs(x)),
    ("float_rsub", lambda x: 2.5 - x), ("float_rtruediv", lambda x: 1.5 / x),
    ("tensor_tensor", lambda x: x * x - x / (x + 10)),
]
OPERATOR_IDS = [c[0] for c in OPERATOR_CASES]


@pytest.mark.parametrize("name,expr", OPERATOR_CASES, ids=OPERATOR_IDS)
@pytest.mark.parametrize("shape", [(2, 3), (), (0,)], ids=str)
def test_operators_on_float_tensors_match_numpy(device, name, expr, shape):
    x = _values(shape, "away0").astype(np.float32)
    assert_close(expr(tensor.tensor(x, device=device)), expr(x))


@pytest.mark.parametrize("name,expr", OPERATOR_CASES, ids=OPERATOR_IDS)
def test_operators_on_int_tensors_match_torch(device, torch, name, expr):
    x = np.array([[1, 2, 3], [4, 5, 6]])
    ours, theirs = expr(tensor.tensor(x, device=device)), expr(torch.tensor(x))
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    assert_close(ours, theirs.numpy())


def test_bitwise_operators_reflected(device):
    m = tensor.tensor([True, False, True], device=device)
    assert to_numpy(True & m).tolist() == [True, False, True]
    assert to_numpy(False | m).tolist() == [True, False, True]
    assert to_numpy(True ^ m).tolist() == [False, True, False]


def test_int_scalar_out_of_range_wraps_like_torch(device, torch):
    x = np.array([1, 200], np.uint8)
    for expr in (lambda t: t + (-1), lambda t: t * 300, lambda t: t - 2**40):
        ours, theirs = expr(tensor.tensor(x, device=device)), expr(torch.tensor(x))
        assert_close(ours, theirs.numpy())


# ---------------------------------------------------------------- errors

@pytest.mark.parametrize("name,fn,ref,dom_a,dom_b", BINARY_CASES, ids=BINARY_IDS)
def test_shape_mismatch_names_both_sizes(device, name, fn, ref, dom_a, dom_b):
    a, b = tensor.ones(2, 3, device=device), tensor.ones(2, 4, device=device)
    with pytest.raises(RuntimeError, match=r"size of tensor a \(3\) must match the size of tensor b \(4\) "
                                           r"at non-singleton dimension 1"):
        fn(a, b)


def test_shape_mismatch_in_operator_and_comparison(device):
    a, b = tensor.ones(5, 3, device=device), tensor.ones(2, 1, 4, device=device)
    msg = r"size of tensor a \(3\) must match the size of tensor b \(4\) at non-singleton dimension 2"
    with pytest.raises(RuntimeError, match=msg):
        a + b
    with pytest.raises(RuntimeError, match=msg):
        a == b  # noqa: B015


@pytest.mark.parametrize("expr,msg", [
    (lambda m: m - m, "with two bool tensors is not supported"),
    (lambda m: m - 1, "with a bool tensor is not supported"),
    (lambda m: 1 - m, "with a bool tensor is not supported"),
    (lambda m: m.float() - m, "with a bool tensor is not supported"),
], ids=["bool-bool", "bool-int", "int-bool", "float-bool"])
def test_bool_subtraction_raises_like_torch(device, expr, msg):
    mask = tensor.tensor([True, False], device=device)
    with pytest.raises(RuntimeError, match=msg):
        expr(mask)


def test_binary_op_rejects_non_numbers(device):
    with pytest.raises(TypeError, match=r"add\(\): expected a Tensor or a Python number .* got str"):
        tensor.ones(2, device=device) + "a"


# Integer-only ops on floating or complex inputs: PyTorch's NotImplementedError, or TypeError for
# ``~``; (name, call, error, also on complex: torch raises another error type for the others).
INTEGRAL_ONLY = [
    ("bitwise_and", lambda m, x: m.bitwise_and(x, x), NotImplementedError, True),
    ("and_operator", lambda m, x: x & x, NotImplementedError, True),
    ("bitwise_or", lambda m, x: m.bitwise_or(x, x), NotImplementedError, True),
    ("bitwise_xor", lambda m, x: x ^ x, NotImplementedError, True),
    ("bitwise_not", lambda m, x: m.bitwise_not(x), NotImplementedError, True),
    ("invert_operator", lambda m, x: ~x, TypeError, True),
    ("lshift", lambda m, x: m.bitwise_left_shift(x, 1), NotImplementedError, False),
    ("rshift", lambda m, x: m.bitwise_right_shift(x, 1), NotImplementedError, False),
    ("gcd", lambda m, x: m.gcd(x, x), NotImplementedError, False),
    ("lcm", lambda m, x: m.lcm(x, x), NotImplementedError, False),
    ("int_and_float", lambda m, x: m.bitwise_and(m.tensor([3, 5]), x), NotImplementedError, False),
]
INTEGRAL_CASES = [
    (name, call, error, dtype)
    for name, call, error, complex_too in INTEGRAL_ONLY
    for dtype in ("float32", "float64", *(("complex64",) if complex_too else ()))
]


@pytest.mark.parametrize(
    ("name", "call", "error", "dtype"), INTEGRAL_CASES, ids=[f"{c[0]}-{c[3]}" for c in INTEGRAL_CASES]
)
def test_integer_only_ops_refuse_floats_as_torch_does(torch, name, call, error, dtype):
    with pytest.raises(error, match="not implemented for|only implemented on integer"):
        call(tensor, tensor.tensor([1.5, 2.5], dtype=getattr(tensor, dtype)))
    with pytest.raises(error):
        call(torch, torch.tensor([1.5, 2.5], dtype=getattr(torch, dtype)))


def test_integer_only_ops_still_take_integers_and_bools(torch):
    def results(m):
        i, b = m.tensor([3, 5, 12]), m.tensor([True, False, True])
        return [i & 6, i | 1, i ^ 5, ~i, ~b, m.gcd(i, m.tensor([6, 10, 8])), m.bitwise_left_shift(i, 2)]

    for ours, theirs in zip(results(tensor), results(torch)):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


# ---------------------------------------------------------------- pow, scalars first, division by zero


def _complex_pow_grads(lib, fn):
    """Gradients w.r.t. the real parts of z and w of a real loss of ``fn(z, w)``."""
    a = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
    b = lib.tensor([0.5, -1.0], dtype=lib.float64, requires_grad=True)
    w = lib.tensor([0.3, 1.2], dtype=lib.float64, requires_grad=True)
    out = fn(lib, lib.complex(a, b), w)
    (lib.view_as_real(out) * lib.tensor([0.7, -1.3], dtype=lib.float64)).sum().backward()
    return [t.grad for t in (a, b, w)]


COMPLEX_POWS = {
    "square": lambda m, z, w: z ** 2,
    "fractional": lambda m, z, w: z ** 2.5,
    "complex_exponent": lambda m, z, w: z ** m.complex(w, -w),
    "real_base": lambda m, z, w: w ** z,
    "scalar_base": lambda m, z, w: m.pow(2.0, z),
}


@pytest.mark.parametrize("name", list(COMPLEX_POWS))
def test_complex_pow_gradient_is_conjugated_as_torch(torch, name):
    ours = _complex_pow_grads(tensor, COMPLEX_POWS[name])
    theirs = _complex_pow_grads(torch, COMPLEX_POWS[name])
    for o, t in zip(ours, theirs):
        assert (o is None) == (t is None)
        if o is not None:
            assert_close(o, t.numpy(), rtol=1e-10, atol=1e-12)


def test_integer_pow_with_negative_exponent_tensors_matches_torch(device, torch):
    base, exponent = [2, 1, -1, -1, 0, 3], [-1, -2, -3, -2, 2, 0]
    ours = tensor.pow(tensor.tensor(base, device=device), tensor.tensor(exponent, device=device))
    assert_close(ours, torch.pow(torch.tensor(base), torch.tensor(exponent)).numpy())
    int8 = tensor.tensor([2], dtype=tensor.int8, device=device) ** tensor.tensor([-2], dtype=tensor.int8, device=device)
    assert int8.dtype is tensor.int8 and int8.tolist() == [0]
    assert (2 ** tensor.tensor([-1, 2], device=device)).tolist() == [0, 4]
    for dtype in (tensor.int64, tensor.uint8, tensor.bool):  # a negative Python exponent raises, as in torch
        with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
            tensor.ones(2, dtype=dtype, device=device) ** -2


@pytest.mark.parametrize("call", [
    lambda m, t: m.pow(2, t), lambda m, t: m.pow(2.5, t), lambda m, t: m.add(1, t, alpha=2),
    lambda m, t: m.add(1.5, t), lambda m, t: m.sub(1, t), lambda m, t: m.div(-2, t.to(m.uint8)),
    lambda m, t: m.div(-7, t.to(m.uint8), rounding_mode="floor"),
], ids=["pow_int", "pow_float", "add_alpha", "add_float", "sub", "div_uint8", "div_floor_uint8"])
def test_python_number_as_first_argument_matches_torch(device, torch, call):
    ours = call(tensor, tensor.tensor([1, 2], device=device))
    theirs = call(torch, torch.tensor([1, 2]))
    assert_close(ours, theirs.numpy())


@pytest.mark.parametrize("dtype", [tensor.int64, tensor.uint8])
@pytest.mark.parametrize("divide", [
    lambda a, b: a // b, lambda a, b: a % b, lambda a, b: tensor.div(a, b, rounding_mode="trunc"),
    lambda a, b: tensor.div(a, b, rounding_mode="floor"), lambda a, b: tensor.fmod(a, b),
], ids=["floordiv", "remainder", "trunc", "floor", "fmod"])
def test_integer_division_by_zero_raises_as_torch(device, dtype, divide):
    a = tensor.tensor([5, 6], dtype=dtype, device=device)
    for zero in (0, tensor.tensor([1, 0], dtype=dtype, device=device)):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            divide(a, zero)
    assert divide(a, 2).dtype is dtype
    with np.errstate(divide="ignore", invalid="ignore"):  # floats divide by zero into inf or NaN
        assert not np.isfinite(to_numpy(divide(a.float(), 0))).any()


def test_gradients_through_complex_python_scalars_match_torch(torch):
    """A complex Python number as an operand is conjugated in the derivative, as a tensor is."""
    ops = {"mul": lambda t: t * (1 + 2j), "rmul": lambda t: (1 + 2j) * t, "div": lambda t: t / (1 + 2j),
           "rdiv": lambda t: (1 + 2j) / t, "rsub": lambda t: 2j - t, "pow": lambda t: t ** (1 + 0.5j),
           "rpow": lambda t: (1 + 0.5j) ** t}

    def grads(lib, f):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        z = lib.tensor([1 + 1j, 2 - 1j], dtype=lib.complex128, requires_grad=True)
        (lib.view_as_real(f(x)).pow(2).sum() + lib.view_as_real(f(z)).pow(2).sum()).backward()
        return np.concatenate([x.grad.numpy(), lib.view_as_real(z.grad).numpy().ravel()])

    for name, f in ops.items():
        np.testing.assert_allclose(grads(tensor, f), grads(torch, f), rtol=1e-12, err_msg=name)


def test_a_python_number_first_where_torch_takes_one(torch):
    """torch's Scalar-self overloads (``torch.mul(2, t)``); the comparisons refuse a number first."""
    for name in ("mul", "remainder", "floor_divide", "bitwise_and", "bitwise_or", "bitwise_xor",
                 "bitwise_left_shift", "bitwise_right_shift", "eq", "maximum"):
        for number in (2, 2.5, True):
            results = []
            for lib in (tensor, torch):
                other = lib.tensor([1, 3]) if name.startswith("bitwise") else lib.tensor([1.0, 3.0])
                try:
                    out = getattr(lib, name)(number, other)
                    results.append((out.tolist(), str(out.dtype).split(".")[-1]))
                except (TypeError, NotImplementedError) as exc:
                    results.append(type(exc).__name__)
            assert results[0] == results[1], (name, number, results)


@pytest.mark.parametrize("op", ["floor", "ceil", "trunc", "round", "fix"])
@pytest.mark.parametrize("values", [[1.5 + 1j], [True]])
def test_rounding_bool_or_complex_is_not_implemented_as_torch(torch, op, values):
    with pytest.raises(NotImplementedError) as theirs:
        getattr(torch.tensor(values), op)()
    with pytest.raises(NotImplementedError) as ours:
        getattr(tensor.tensor(values), op)()
    assert str(ours.value) == str(theirs.value).replace("torch.", "tensor.")


def test_clamp_with_bounds_that_do_not_broadcast_is_a_runtime_error(torch):
    with pytest.raises(RuntimeError):
        torch.ones(2, 3).clamp(min=torch.ones(4))
    with pytest.raises(RuntimeError, match="broadcast"):
        tensor.ones(2, 3).clamp(min=tensor.ones(4))


def test_abs_of_complex_still_differentiates_through_sgn(torch):
    z = [1 + 1j, -2 + 0.5j]
    ours = tensor.tensor(z, requires_grad=True)
    theirs = torch.tensor(z, requires_grad=True)
    ours.abs().sum().backward()
    theirs.abs().sum().backward()
    assert_close(ours.grad.numpy(), theirs.grad.numpy())


@pytest.mark.parametrize("op", ["relu", "clamp", "clamp_max"])
def test_relu_and_clamp_gradients_select_as_torch_at_nan_and_inf(op, torch):
    """relu/clamp backward select the incoming gradient (PyTorch's threshold/clamp backward): a
    NaN or inf gradient at a dropped element gives 0, and relu passes it at a NaN input."""
    nan, inf = float("nan"), float("inf")
    results = []
    for lib in (tensor, torch):
        x = lib.tensor([nan, 1.0, -1.0, 0.0, 2.0], requires_grad=True)
        y = {"relu": lambda: lib.relu(x), "clamp": lambda: lib.clamp(x, -0.5, 1.5),
             "clamp_max": lambda: lib.clamp(x, max=1.0)}[op]()
        y.backward(lib.tensor([1.0, 1.0, nan, inf, 1.0]))
        results.append(x.grad.detach().numpy())
    np.testing.assert_array_equal(*results)


@pytest.mark.parametrize("dtype", ["float64", "bfloat16"])
def test_relu_and_clamp_double_backward_match_torch(dtype, torch):
    got = []
    for lib in (tensor, torch):
        x = lib.tensor([-1.0, 1.0, 4.0], dtype=getattr(lib, dtype), requires_grad=True)
        g = lib.tensor([1.0, 2.0, 3.0], dtype=getattr(lib, dtype), requires_grad=True)
        row = []
        for y in (lib.relu(x), lib.clamp(x, -0.5, 2.0)):
            (gx,) = lib.autograd.grad(y, x, g, create_graph=True)
            (gg,) = lib.autograd.grad((gx * gx).sum(), g)
            row += [gx.detach().float().numpy(), gg.float().numpy()]
        got.append(row)
    for ours, theirs in zip(*got):
        np.testing.assert_array_equal(ours, theirs)


# (dtype, min, max): number bounds in and out of the input dtype's range
CLAMP_NUMBER_BOUNDS = [
    ("uint8", -1, None), ("uint8", None, -3), ("uint8", -255, 254), ("uint8", None, 300), ("uint8", -256, None),
    ("uint8", -1.5, 300.5), ("int8", -200, None), ("int8", None, 127), ("int64", None, 2**63),
    ("float16", None, 1e6), ("float16", None, 10**6), ("float16", -65504.0, float("inf")),
    ("float64", -1e300, 1e300), ("bool", None, 2),
]


@pytest.mark.parametrize("dtype,low,high", CLAMP_NUMBER_BOUNDS, ids=[str(c) for c in CLAMP_NUMBER_BOUNDS])
def test_clamp_reads_number_bounds_in_the_input_dtype_as_torch(torch, dtype, low, high):
    """A bound is converted as PyTorch converts numbers: ``-1`` is 255 for uint8, and a bound out of
    the dtype's range is a RuntimeError (not numpy's OverflowError)."""
    results = []
    for lib in (tensor, torch):
        x = lib.tensor([1, 2], dtype=getattr(lib, dtype))
        try:
            results.append(lib.clamp(x, low, high).tolist())
        except Exception as exc:  # noqa: BLE001 - the class is the result compared
            results.append(type(exc).__name__)
    assert results[0] == results[1]


def test_clamp_reads_numpy_scalar_bounds_as_python_numbers(torch):
    """numpy's float64 is a float whose dtype numpy keeps: a float32 result stayed float64."""
    for bounds in ((np.float64(0.5), np.float64(0.7)), (np.int64(0), None), (np.float32(-1.0), 2)):
        ours, theirs = tensor.clamp(tensor.ones(2), *bounds), torch.clamp(torch.ones(2), *bounds)
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_where_of_two_python_numbers_takes_torchs_default_dtypes(torch):
    """A complex number beside a float is complex64 with the float32 default (was complex128)."""
    for a, b in ((1j, 2.0), (1, 2.0), (1, 2), (True, 2), (2.0, 1j)):
        ours = tensor.where(tensor.tensor([True, False]), a, b)
        theirs = torch.where(torch.tensor([True, False]), a, b)
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
