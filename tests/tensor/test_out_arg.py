"""PyTorch's ``out=`` keyword (tensor/_out_arg.py, Note [out= arguments]): which functions take
it, its results on the whole op table against the plain calls and against torch's ``out=``, and
its rules for dtypes, shapes, tuples, autograd and aliasing, compared with torch."""

from __future__ import annotations

import inspect
import os
import re
import warnings

import numpy as np
import pytest

import tensor
from tensor._out_arg import OUT_FUNCTIONS
from tensor._torch_misc import REMOVED_FUNCTIONS
from tests.helpers import assert_close
from tests.tensor.opinfo import OPS, Bool, Int

ALL_OUT_FUNCTIONS = {f"{m}.{n}" if m else n for m, names in OUT_FUNCTIONS.items() for n in names}

# Functions whose values two calls need not share: random draws, and empty's uninitialised memory.
_UNREPEATABLE = {"bernoulli", "empty", "multinomial", "normal", "rand", "randint", "randn", "randperm"}


def _torch_out_functions(torch, module: str) -> set:
    """The names of the functions of ``tensor`` (``module`` '') or of its ``linalg``, ``special``
    or ``fft`` whose torch counterparts take ``out``: for ``torch``, from its bindings' stub; for
    the others, from the signature their docs begin with (``solve(A, B, *, left=True, out=None)``)."""
    ours_module, theirs_module = (getattr(tensor, module), getattr(torch, module)) if module else (tensor, torch)
    stub = os.path.join(os.path.dirname(torch.__file__), "_C", "_VariableFunctions.pyi")
    bound, with_out = set(), set()
    if not module:
        with open(stub) as f:
            source = f.read()
        for match in re.finditer(r"^def (\w+)\((.*?)\) ->", source, re.S | re.M):
            bound.add(match.group(1))
            if re.search(r"\bout: ", match.group(2)):
                with_out.add(match.group(1))
    names = set()
    for name in dir(ours_module):
        ours, theirs = getattr(ours_module, name, None), getattr(theirs_module, name, None)
        if name.startswith("_") or not callable(ours) or isinstance(ours, type) or theirs is None:
            continue
        if isinstance(theirs, type) or not callable(theirs):
            continue
        if name in bound:
            takes_out = name in with_out
        else:
            try:
                takes_out = "out" in inspect.signature(theirs).parameters
            except (TypeError, ValueError):  # a builtin: its docs begin with its signature
                takes_out = bool(re.search(r"\bout=None", (theirs.__doc__ or "").strip().split("\n\n")[0]))
        if takes_out:
            names.add(name)
    return names


@pytest.mark.parametrize("module", ["", "linalg", "special", "fft"], ids=["tensor", "linalg", "special", "fft"])
def test_the_functions_taking_out_are_torchs(torch, module):
    removed = set(REMOVED_FUNCTIONS) if not module else set()  # solve & co.: they only raise, with any arguments
    assert OUT_FUNCTIONS[module] == _torch_out_functions(torch, module) - removed


class _WithOut:
    """A stand-in for the module an op-table lambda calls (``tensor`` or ``torch``): each function
    in ``OUT_FUNCTIONS`` (its ``linalg``, ``special`` and ``fft`` too) runs plainly and then
    again with ``out=`` tensors of no elements and the plain result's dtypes (so they are resized
    without a warning); the ``out=`` call's result is returned, and any difference from the
    plain one is collected in ``problems``."""

    def __init__(self, lib, module: str = "", parent=None) -> None:
        self.lib, self.module, self.root = lib, module, parent or self
        if parent is None:
            self.called, self.problems = set(), []
            self.without_out = set()  # torch's overloads without out (argsort without stable=, median())
            self.drew = False  # whether an unrepeatable function ran since the caller last reset it

    def __getattr__(self, name):
        fn = getattr(self.lib, name)
        if not self.module and name in ("linalg", "special", "fft"):
            return _WithOut(fn, name, self)
        if name not in OUT_FUNCTIONS[self.module]:
            return fn
        root, qualified = self.root, f"{self.module}.{name}" if self.module else name
        tensor_type = root.lib.Tensor

        def call(*args, **kwargs):
            root.drew |= name in _UNREPEATABLE
            plain = fn(*args, **kwargs)
            single = isinstance(plain, tensor_type)
            outs = [root.lib.empty(0, dtype=p.dtype) for p in ((plain,) if single else plain)]
            with warnings.catch_warnings():
                warnings.filterwarnings("error", "An output with one or more elements")  # empty: silent
                try:
                    got = fn(*args, out=outs[0] if single else tuple(outs), **kwargs)
                except TypeError:
                    if root.lib is tensor:
                        raise
                    root.without_out.add(qualified)
                    return plain
            root.called.add(qualified)
            if single and got is not outs[0]:
                root.problems.append(f"{qualified}: did not return its out tensor")
            for k, (a, b) in enumerate(zip((plain,) if single else plain, outs)):
                if a.dtype != b.dtype or a.shape != b.shape:
                    got_as = f"{b.dtype}{list(b.shape)} for {a.dtype}{list(a.shape)}"
                    root.problems.append(f"{qualified} output {k}: {got_as}")
                elif name not in _UNREPEATABLE and not np.array_equal(_host(a), _host(b), equal_nan=True):
                    root.problems.append(f"{qualified} output {k}: values differ from the plain call")
            return got

        return call


def _values(t, expected) -> None:
    """``t`` holds ``expected`` (in ``t``'s dtype)."""
    assert_close(t, np.asarray(expected, dtype=_host(t).dtype))


def _host(t):
    return np.asarray(t.detach().cpu().resolve_conj().numpy())  # torch's ihfft gives a conjugate view


def _inputs(lib, sample):
    return [lib.tensor(v.value) if isinstance(v, (Int, Bool)) else lib.tensor(np.asarray(v)) for v in sample]


_X, _Y = np.linspace(-1.5, 2.0, 12).reshape(3, 4), np.linspace(0.5, 3.0, 12).reshape(3, 4)
_B, _I = np.array([[True, False, True, True]] * 3), np.array([[2, 0], [1, 3], [0, 0]])

# The common functions the op table does not call, as op-table lambdas: fn(module, x, y, b, i)
# with float64 x (3, 4), positive y (3, 4), a mask b and int64 indices i (3, 2).
COMMON = [
    lambda m, x, y, b, i: m.add(x, y, alpha=2), lambda m, x, y, b, i: m.sub(x, 1.5),
    lambda m, x, y, b, i: m.subtract(x, y), lambda m, x, y, b, i: m.mul(x, y),
    lambda m, x, y, b, i: m.multiply(x, 2), lambda m, x, y, b, i: m.div(x, y),
    lambda m, x, y, b, i: m.divide(x, y, rounding_mode="floor"), lambda m, x, y, b, i: m.true_divide(x, y),
    lambda m, x, y, b, i: m.floor_divide(x, y), lambda m, x, y, b, i: m.remainder(x, y),
    lambda m, x, y, b, i: m.pow(y, x), lambda m, x, y, b, i: m.float_power(y, 2),
    lambda m, x, y, b, i: m.matmul(x, y.T), lambda m, x, y, b, i: m.mm(x, y.T),
    lambda m, x, y, b, i: m.bmm(x[None], y.T[None]), lambda m, x, y, b, i: m.dot(x[0], y[0]),
    lambda m, x, y, b, i: m.chain_matmul(x, y.T, x), lambda m, x, y, b, i: m.ger(x[0], y[1]),
    lambda m, x, y, b, i: m.exp(x), lambda m, x, y, b, i: m.expm1(x), lambda m, x, y, b, i: m.log(y),
    lambda m, x, y, b, i: m.log1p(y), lambda m, x, y, b, i: m.sqrt(y), lambda m, x, y, b, i: m.rsqrt(y),
    lambda m, x, y, b, i: m.sigmoid(x), lambda m, x, y, b, i: m.tanh(x), lambda m, x, y, b, i: m.sin(x),
    lambda m, x, y, b, i: m.cos(x), lambda m, x, y, b, i: m.abs(x), lambda m, x, y, b, i: m.absolute(x),
    lambda m, x, y, b, i: m.neg(x), lambda m, x, y, b, i: m.negative(x), lambda m, x, y, b, i: m.sign(x),
    lambda m, x, y, b, i: m.sgn(x), lambda m, x, y, b, i: m.reciprocal(y), lambda m, x, y, b, i: m.square(x),
    lambda m, x, y, b, i: m.erf(x), lambda m, x, y, b, i: m.erfc(x), lambda m, x, y, b, i: m.round(x),
    lambda m, x, y, b, i: m.round(x, decimals=1), lambda m, x, y, b, i: m.floor(x), lambda m, x, y, b, i: m.ceil(x),
    lambda m, x, y, b, i: m.trunc(x), lambda m, x, y, b, i: m.fix(x), lambda m, x, y, b, i: m.arccos(x / 2),
    lambda m, x, y, b, i: m.arccosh(y + 1), lambda m, x, y, b, i: m.arcsinh(x), lambda m, x, y, b, i: m.arctan(x),
    lambda m, x, y, b, i: m.arctan2(x, y), lambda m, x, y, b, i: m.angle(x),
    lambda m, x, y, b, i: m.clamp(x, -1, 1), lambda m, x, y, b, i: m.clip(x, max=0.5),
    lambda m, x, y, b, i: m.clamp_min(x, 0), lambda m, x, y, b, i: m.clamp_max(x, 0),
    lambda m, x, y, b, i: m.maximum(x, y), lambda m, x, y, b, i: m.minimum(x, y),
    lambda m, x, y, b, i: m.eq(x, y), lambda m, x, y, b, i: m.ne(x, 0), lambda m, x, y, b, i: m.not_equal(x, y),
    lambda m, x, y, b, i: m.lt(x, y), lambda m, x, y, b, i: m.less(x, y), lambda m, x, y, b, i: m.le(x, 0),
    lambda m, x, y, b, i: m.less_equal(x, y), lambda m, x, y, b, i: m.gt(x, y), lambda m, x, y, b, i: m.greater(x, 0),
    lambda m, x, y, b, i: m.ge(x, y), lambda m, x, y, b, i: m.greater_equal(x, y),
    lambda m, x, y, b, i: m.logical_and(b, x > 0), lambda m, x, y, b, i: m.logical_or(b, x > 0),
    lambda m, x, y, b, i: m.logical_xor(b, x > 0), lambda m, x, y, b, i: m.logical_not(b),
    lambda m, x, y, b, i: m.bitwise_and(i, 3), lambda m, x, y, b, i: m.bitwise_or(i, 4),
    lambda m, x, y, b, i: m.bitwise_xor(i, 1), lambda m, x, y, b, i: m.bitwise_not(i),
    lambda m, x, y, b, i: m.isposinf(x / 0), lambda m, x, y, b, i: m.isneginf(x / 0),
    lambda m, x, y, b, i: m.where(b, x, y), lambda m, x, y, b, i: m.cat([x, y], 1),
    lambda m, x, y, b, i: m.concat([x, y]), lambda m, x, y, b, i: m.concatenate([x, y], 1),
    lambda m, x, y, b, i: m.stack([x, y]), lambda m, x, y, b, i: m.row_stack([x, y]),
    lambda m, x, y, b, i: m.sum(x), lambda m, x, y, b, i: m.sum(x, 1, keepdim=True),
    lambda m, x, y, b, i: m.mean(x, 0), lambda m, x, y, b, i: m.prod(y, 1), lambda m, x, y, b, i: m.amax(x, 1),
    lambda m, x, y, b, i: m.amin(x, 0), lambda m, x, y, b, i: m.argmax(x, 1), lambda m, x, y, b, i: m.argmin(x),
    lambda m, x, y, b, i: m.max(x, 1), lambda m, x, y, b, i: m.min(x, 0), lambda m, x, y, b, i: m.max(x),
    lambda m, x, y, b, i: m.std(x, 1), lambda m, x, y, b, i: m.var(x, 0), lambda m, x, y, b, i: m.logsumexp(x, 1),
    lambda m, x, y, b, i: m.softmax(x, 1), lambda m, x, y, b, i: m.log_softmax(x, 0),
    lambda m, x, y, b, i: m.any(b, 1), lambda m, x, y, b, i: m.all(b),
    lambda m, x, y, b, i: m.gather(x, 1, i), lambda m, x, y, b, i: m.index_select(x, 1, i[:, 0]),
    lambda m, x, y, b, i: m.scatter(x, 1, i, y), lambda m, x, y, b, i: m.scatter_add(x, 1, i, y),
    lambda m, x, y, b, i: m.index_add(x, 0, i[:, 0], y), lambda m, x, y, b, i: m.zeros(2, 3),
    lambda m, x, y, b, i: m.ones(4), lambda m, x, y, b, i: m.full((2,), 1.5), lambda m, x, y, b, i: m.empty(3),
    lambda m, x, y, b, i: m.arange(1, 7, 2), lambda m, x, y, b, i: m.range(0, 3),
    lambda m, x, y, b, i: m.linspace(0, 1, 5), lambda m, x, y, b, i: m.rand(2, 2),
    lambda m, x, y, b, i: m.randn(3), lambda m, x, y, b, i: m.randint(0, 5, (4,)),
    lambda m, x, y, b, i: m.randperm(5), lambda m, x, y, b, i: m.normal(0.0, 1.0, (3,)),
    lambda m, x, y, b, i: m.bernoulli(m.sigmoid(x)), lambda m, x, y, b, i: m.multinomial(y, 2),
    lambda m, x, y, b, i: m.polar(y, x), lambda m, x, y, b, i: m.complex(x, y),
    lambda m, x, y, b, i: m.conj_physical(x), lambda m, x, y, b, i: m.diagonal_copy(x),
    lambda m, x, y, b, i: m.t_copy(x), lambda m, x, y, b, i: m.transpose_copy(x, 0, 1),
    lambda m, x, y, b, i: m.permute_copy(x, (1, 0)), lambda m, x, y, b, i: m.view_copy(x, (4, 3)),
    lambda m, x, y, b, i: m.squeeze_copy(x[None]), lambda m, x, y, b, i: m.unsqueeze_copy(x, 0),
    lambda m, x, y, b, i: m.expand_copy(x[:1], (2, 4)), lambda m, x, y, b, i: m.select_copy(x, 0, 1),
    lambda m, x, y, b, i: m.slice_copy(x, 1, 1, 3), lambda m, x, y, b, i: m.narrow_copy(x, 0, 1, 2),
    lambda m, x, y, b, i: m.detach_copy(x), lambda m, x, y, b, i: m.alias_copy(x),
    lambda m, x, y, b, i: m.unfold_copy(x, 1, 2, 1), lambda m, x, y, b, i: m.as_strided_copy(x, (2, 2), (1, 2)),
    lambda m, x, y, b, i: m.inverse(_spd(m, x)),
    lambda m, x, y, b, i: m.matrix_power(x[:, :3], 2),
    lambda m, x, y, b, i: m.cholesky(_spd(m, x)),
    lambda m, x, y, b, i: m.qr(_tall(m, x)),
    lambda m, x, y, b, i: m.svd(_tall(m, x))[1],  # the singular vectors' signs differ from torch's
    lambda m, x, y, b, i: m.slogdet(x[:, :3] + 3 * m.eye(3, dtype=x.dtype)),
    lambda m, x, y, b, i: m.frobenius_norm(x, (0, 1)),
    lambda m, x, y, b, i: m.cholesky_inverse(m.linalg.cholesky(_spd(m, x))),
    lambda m, x, y, b, i: m.cholesky_solve(y[:, :2], m.linalg.cholesky(_spd(m, x))),
    lambda m, x, y, b, i: m.triangular_solve(y[:, :2], m.triu(_spd(m, x))), lambda m, x, y, b, i: m.geqrf(_tall(m, x)),
    lambda m, x, y, b, i: m.orgqr(*m.geqrf(_tall(m, x))), lambda m, x, y, b, i: m.ormqr(*m.geqrf(_spd(m, x)), y[:, :2]),
    lambda m, x, y, b, i: m.lu_solve(y[:, :2], *m.linalg.lu_factor(_spd(m, x))),
    lambda m, x, y, b, i: m.lu_unpack(*m.linalg.lu_factor(_spd(m, x))),
    lambda m, x, y, b, i: m.view_as_real_copy(m.complex(x, y)), lambda m, x, y, b, i: m.view_as_complex_copy(x[:, :2]),
    lambda m, x, y, b, i: m.nonzero_static(b, size=12),
    lambda m, x, y, b, i: m.linalg.cholesky_ex(_spd(m, x)), lambda m, x, y, b, i: m.linalg.inv_ex(_spd(m, x)),
    lambda m, x, y, b, i: m.linalg.eigvals(m.triu(x[:, :3])), lambda m, x, y, b, i: m.linalg.eig(m.triu(x[:, :3]))[0],
    lambda m, x, y, b, i: m.linalg.householder_product(*m.geqrf(_tall(m, x))),
    lambda m, x, y, b, i: m.linalg.ldl_factor(_spd(m, x)), lambda m, x, y, b, i: m.linalg.ldl_factor_ex(_spd(m, x)),
    lambda m, x, y, b, i: m.linalg.ldl_solve(*m.linalg.ldl_factor(_spd(m, x)), y[:, :2]),
    lambda m, x, y, b, i: m.linalg.lu(_tall(m, x)), lambda m, x, y, b, i: m.linalg.lu_factor(_spd(m, x)),
    lambda m, x, y, b, i: m.linalg.lu_factor_ex(_spd(m, x)),
    lambda m, x, y, b, i: m.linalg.lu_solve(*m.linalg.lu_factor(_spd(m, x)), y[:, :2]),
    lambda m, x, y, b, i: m.linalg.matmul(x, y.T), lambda m, x, y, b, i: m.linalg.solve_ex(_spd(m, x), y[:, :2]),
    lambda m, x, y, b, i: m.linalg.vecdot(x, y),
    lambda m, x, y, b, i: m.special.digamma(y), lambda m, x, y, b, i: m.special.erf(x),
    lambda m, x, y, b, i: m.special.erfc(x), lambda m, x, y, b, i: m.special.erfinv(x / 3),
    lambda m, x, y, b, i: m.special.exp2(x), lambda m, x, y, b, i: m.special.expm1(x),
    lambda m, x, y, b, i: m.special.gammainc(y, y), lambda m, x, y, b, i: m.special.gammaincc(y, y),
    lambda m, x, y, b, i: m.special.i0(x), lambda m, x, y, b, i: m.special.log1p(y),
    lambda m, x, y, b, i: m.special.logit(y / 4), lambda m, x, y, b, i: m.special.logsumexp(x, 1),
    lambda m, x, y, b, i: m.special.multigammaln(y + 1, 2), lambda m, x, y, b, i: m.special.polygamma(1, y),
    lambda m, x, y, b, i: m.special.round(x), lambda m, x, y, b, i: m.special.sinc(x),
    lambda m, x, y, b, i: m.special.xlogy(x, y),
    lambda m, x, y, b, i: m.fft.fft(x), lambda m, x, y, b, i: m.fft.ifft(x, dim=0),
    lambda m, x, y, b, i: m.fft.fft2(x), lambda m, x, y, b, i: m.fft.ifft2(x), lambda m, x, y, b, i: m.fft.fftn(x),
    lambda m, x, y, b, i: m.fft.ifftn(x), lambda m, x, y, b, i: m.fft.rfft(x), lambda m, x, y, b, i: m.fft.irfft(x),
    lambda m, x, y, b, i: m.fft.rfft2(x), lambda m, x, y, b, i: m.fft.irfft2(x), lambda m, x, y, b, i: m.fft.rfftn(x),
    lambda m, x, y, b, i: m.fft.irfftn(x), lambda m, x, y, b, i: m.fft.hfft(x),
    lambda m, x, y, b, i: m.fft.ihfft(x), lambda m, x, y, b, i: m.fft.fftfreq(5),
    lambda m, x, y, b, i: m.fft.rfftfreq(6, 0.5),
]


def _spd(m, x):
    """A symmetric positive definite 3x3 matrix made from ``x`` (whose rank is 2)."""
    return x @ x.T + 3 * m.eye(3, dtype=x.dtype)


def _tall(m, x):
    """A 4x3 matrix of full rank made from ``x``, so that its factors are unique."""
    return x.T + 2 * m.eye(4, 3, dtype=x.dtype)


def _common_inputs(lib):
    return [lib.tensor(_X), lib.tensor(_Y), lib.tensor(_B), lib.tensor(_I)]


def _run_all(lib):
    """Every op-table sample and every ``COMMON`` call on ``lib`` through ``_WithOut``: the
    proxy, and the results of the calls (its out tensors)."""
    proxy, results = _WithOut(lib), []
    calls = [(op.name, op.rtol, op.atol, op.fn, _inputs(lib, sample)) for op in OPS for sample in op.samples]
    calls += [(f"COMMON[{k}]", 1e-6, 1e-7, call, _common_inputs(lib)) for k, call in enumerate(COMMON)]
    for name, rtol, atol, fn, inputs in calls:
        proxy.drew = False
        result = fn(proxy, *inputs)
        if not proxy.drew:  # torch draws other numbers
            results.append((name, rtol, atol, result))
    return proxy, results


def test_out_gives_the_plain_results():
    proxy, _ = _run_all(tensor)
    assert not proxy.problems
    assert len(proxy.called) >= 330, sorted(ALL_OUT_FUNCTIONS - proxy.called)


def test_out_results_match_torchs_out(torch):
    ours, our_results = _run_all(tensor)
    theirs, their_results = _run_all(torch)
    assert not ours.problems and not theirs.problems
    assert [r[0] for r in our_results] == [r[0] for r in their_results]
    for (name, rtol, atol, a), (_, _, _, b) in zip(our_results, their_results):
        for x, y in zip(*(o if isinstance(o, (tuple, list)) else (o,) for o in (a, b))):
            if hasattr(x, "dtype"):
                np.testing.assert_allclose(_host(x), _host(y), rtol=rtol, atol=atol, err_msg=name)


# (name, fn(module, out) -> result, the out tensor's dtype and shape); each compared with torch
CASTS = [
    ("add_f32_into_f64", lambda m, o: m.add(m.tensor([1.5, 2.5]), 1.0, out=o), "float64", (2,)),
    ("eq_into_float", lambda m, o: m.eq(m.tensor([1.5, 2.5]), 1.5, out=o), "float32", (2,)),
    ("sum_in_outs_dtype", lambda m, o: m.sum(m.tensor([1.5, 2.5]), 0, out=o), "int64", ()),
    ("cumsum_in_outs_dtype", lambda m, o: m.cumsum(m.tensor([1.5, 2.5]), 0, out=o), "int64", (2,)),
    ("sum_int_into_float", lambda m, o: m.sum(m.tensor([1, 2]), 0, out=o), "float32", ()),
    ("zeros_takes_outs_dtype", lambda m, o: m.zeros(3, out=o), "int64", (3,)),
    ("arange_takes_outs_dtype", lambda m, o: m.arange(3, out=o), "float64", (3,)),
    ("linspace_takes_outs_dtype", lambda m, o: m.linspace(0, 1, 3, out=o), "float64", (3,)),
    ("where", lambda m, o: m.where(m.tensor([True, False]), m.tensor([1.0, 2.0]), m.zeros(2), out=o), "float32", (2,)),
    ("cat", lambda m, o: m.cat([m.ones(2), m.zeros(1)], out=o), "float32", (3,)),
    ("matmul", lambda m, o: m.matmul(m.ones(2, 3), m.ones(3, 2), out=o), "float32", (2, 2)),
]


@pytest.mark.parametrize(("name", "call", "dtype", "shape"), CASTS, ids=[c[0] for c in CASTS])
def test_out_dtypes_match_torch(torch, name, call, dtype, shape):
    ours, theirs = tensor.empty(shape, dtype=getattr(tensor, dtype)), torch.empty(shape, dtype=getattr(torch, dtype))
    result = call(tensor, ours)
    assert result is ours and str(ours.dtype).split(".")[-1] == dtype
    call(torch, theirs)
    assert_close(ours, theirs.numpy())


ERRORS = [
    ("float_into_int", lambda m: m.add(m.tensor([1.5]), 1.0, out=m.empty(1, dtype=m.int64)), "can't be cast"),
    ("complex_into_real", lambda m: m.mul(m.ones(1, dtype=m.complex64), 2, out=m.empty(1)), "can't be cast"),
    ("float_exp_into_int", lambda m: m.exp(m.tensor([1, 2]), out=m.empty(2, dtype=m.int64)), "can't be cast"),
    ("factory_dtype_mismatch", lambda m: m.zeros(2, dtype=m.float32, out=m.empty(2, dtype=m.int64)), "dtype"),
    ("sum_dtype_mismatch", lambda m: m.sum(m.ones(2), 0, dtype=m.float64, out=m.empty(())), "dtype"),
    ("input_requires_grad", lambda m: m.add(m.ones(2, requires_grad=True), 1, out=m.empty(2)), "out=..."),
    ("out_requires_grad", lambda m: m.add(m.ones(2), 1, out=m.empty(2, requires_grad=True)), "out=..."),
    ("cat_input_requires_grad", lambda m: m.cat([m.ones(2, requires_grad=True)], out=m.empty(2)), "out=..."),
]


@pytest.mark.parametrize(("name", "call", "match"), ERRORS, ids=[e[0] for e in ERRORS])
def test_out_errors_are_torchs(torch, name, call, match):
    with pytest.raises(RuntimeError, match=re.escape(match)):
        call(tensor)
    with pytest.raises(RuntimeError):
        call(torch)


@pytest.mark.parametrize("bad", [[1, 2], "x", (), 3.0])
def test_an_out_that_is_not_tensors_is_a_type_error(bad):
    with pytest.raises(TypeError, match="argument 'out' must be Tensor"):
        tensor.add(tensor.ones(2), 1, out=bad)


def test_tuple_results_need_a_tuple_of_that_many():
    x = tensor.tensor([[1.0, 3.0], [4.0, 2.0]])
    with pytest.raises(TypeError, match="must be a tuple of 2 Tensors, not Tensor"):
        tensor.max(x, 1, out=tensor.empty(2))
    with pytest.raises(TypeError, match="must be a Tensor, not tuple of 2 Tensors"):
        tensor.add(x, 1, out=(tensor.empty(2), tensor.empty(2)))


def test_no_grad_allows_inputs_that_require_grad(torch):
    x = tensor.ones(2, requires_grad=True)
    out = tensor.empty(2)
    with tensor.no_grad():
        assert tensor.mul(x, 3, out=out) is out
    assert not out.requires_grad and out.grad_fn is None
    _values(out, [3.0, 3.0])


def test_a_resized_out_warns_as_torch_does(torch):
    out, theirs = tensor.empty(3), torch.empty(3)
    with pytest.warns(UserWarning, match=r"had shape \[3\], which does not match the required output shape \[2\]"):
        tensor.add(tensor.ones(2), 1, out=out)
    with pytest.warns(UserWarning, match=r"had shape \[3\]"):
        torch.add(torch.ones(2), 1, out=theirs)
    assert out.shape == (2,) and tuple(theirs.shape) == (2,)
    assert_close(out, theirs.numpy())


def test_tuple_outs_come_back_as_the_named_tuple(torch):
    data = np.array([[1.0, 3.0], [4.0, 2.0]])
    values, indices = tensor.empty(0, dtype=tensor.float64), tensor.empty(0, dtype=tensor.int64)
    result = tensor.max(tensor.tensor(data), 1, out=(values, indices))
    assert result.values is values and result.indices is indices
    expected = torch.max(
        torch.tensor(data), 1, out=(torch.empty(0, dtype=torch.float64), torch.empty(0, dtype=torch.long))
    )
    assert_close(values, expected.values.numpy())
    assert_close(indices, expected.indices.numpy())
    outs = [tensor.empty(2, dtype=tensor.float64), tensor.empty(0, dtype=tensor.int64)]
    sorted_, order = tensor.sort(tensor.tensor(data[0]), descending=True, out=outs)
    _values(sorted_, [3.0, 1.0])
    _values(order, [1, 0])


def test_split_copy_fills_the_list_and_returns_none(torch):
    outs = [tensor.empty(2), tensor.empty(2)]
    assert tensor.split_copy(tensor.arange(4.0), 2, out=outs) is None
    assert torch.split_copy(torch.arange(4.0), 2, out=[torch.empty(2), torch.empty(2)]) is None
    _values(outs[0], [0.0, 1.0])
    _values(outs[1], [2.0, 3.0])


def test_an_out_aliasing_an_input_and_a_view_out(torch):
    a = tensor.tensor([1.0, 2.0])
    assert tensor.add(a, a, out=a) is a
    _values(a, [2.0, 4.0])
    base = tensor.zeros(2, 2)
    tensor.mul(tensor.tensor([1.0, 2.0]), 3, out=base[:, 1])  # a non-contiguous view
    theirs = torch.zeros(2, 2)
    torch.mul(torch.tensor([1.0, 2.0]), 3, out=theirs[:, 1])
    _values(base, theirs.numpy())


def test_writing_out_bumps_its_version_so_autograd_sees_it():
    w = tensor.ones(2, requires_grad=True)
    saved = tensor.empty(2)
    tensor.add(tensor.ones(2), 1, out=saved)
    y = (w * saved).sum()  # saves ``saved`` for w's gradient
    tensor.add(tensor.ones(2), 2, out=saved)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_numpy_names_and_out_together(torch):
    data = np.arange(6.0).reshape(2, 3)
    out = tensor.empty(3)
    assert tensor.sum(tensor.tensor(data), axis=0, out=out) is out
    _values(out, torch.sum(torch.tensor(data), axis=0, out=torch.empty(3, dtype=torch.float64)).numpy())


def test_methods_take_no_out_as_in_torch(torch):
    for lib in (tensor, torch):
        x = lib.ones(2)
        with pytest.raises(TypeError):
            x.add(x, out=x)


def test_out_under_compile():
    def fn(a, b, out):
        return tensor.add(a * 2, b, out=out)

    out = tensor.empty(2)
    result = tensor.compile(fn)(tensor.ones(2), tensor.ones(2), out)
    _values(result, [3.0, 3.0])
    _values(out, [3.0, 3.0])
