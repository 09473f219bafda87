"""An OpInfo-like table for the conformance tests: each op is one lambda written against the
torch API, run once with ``tensor`` and once with ``torch`` as the module (issue 16).

``OpInfo(name, fn, samples, grad=...)``: ``fn(lib, *inputs)`` calls the op; ``samples`` is a list
of tuples of numpy arrays (or ``Int``/``Bool`` wrappers for index and mask arguments).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

RNG = np.random.default_rng(16)


def r(*shape, low=-2.0, high=2.0):
    """Uniform float64 samples; distinct values (no ties) for the sorting ops."""
    n = int(np.prod(shape)) if shape else 1
    values = np.linspace(low, high, n) + RNG.uniform(0, 1e-3, n)
    return RNG.permutation(values).reshape(shape)


def pos(*shape):
    """Positive samples (for log, lgamma, ...)."""
    return r(*shape, low=0.3, high=3.0)


def unit(*shape):
    """Samples inside (-1, 1) (for asin, atanh, erfinv)."""
    return r(*shape, low=-0.9, high=0.9)


@dataclass(frozen=True)
class Int:
    """An integer (index) argument: never differentiated, sent as int64."""

    value: np.ndarray


@dataclass(frozen=True)
class Bool:
    """A mask argument."""

    value: np.ndarray


@dataclass
class OpInfo:
    name: str
    fn: object
    samples: list
    grad: bool = True
    gradgrad: bool = False
    atol: float = 1e-7
    rtol: float = 1e-6
    tags: tuple = field(default=())


def I(*values):  # noqa: E743 - short spelling for the table
    return Int(np.array(values, dtype=np.int64))


def M(array):
    return Bool(np.asarray(array, dtype=bool))


A23, A34, A234 = r(2, 3), r(3, 4), r(2, 3, 4)
SQ = r(3, 3) + 3 * np.eye(3)
SPD_ROOT = r(3, 3)
TALL = r(4, 3)

OPS = [
    # -------------------------------------------------------------- sorting and selection
    OpInfo("sort", lambda m, x: m.sort(x, 1), [(A23,), (A234,)]),
    OpInfo("sort_desc", lambda m, x: m.sort(x, 0, descending=True), [(A23,), (r(5),), (r(0),)]),
    OpInfo("sort_0d", lambda m, x: m.sort(x), [(np.array(1.5),)]),
    OpInfo("argsort", lambda m, x: m.argsort(x, -1), [(A234,)], grad=False),
    OpInfo("msort", lambda m, x: m.msort(x), [(A34,)]),
    OpInfo("topk", lambda m, x: m.topk(x, 2, 1), [(A34,), (A234,)]),
    OpInfo("topk_smallest", lambda m, x: m.topk(x, 3, 0, largest=False), [(r(6),), (r(4, 2),)]),
    OpInfo("kthvalue", lambda m, x: m.kthvalue(x, 2, 1, keepdim=True), [(A34,), (A234,)]),
    OpInfo("median", lambda m, x: m.median(x), [(r(5),), (A34,)]),
    OpInfo("median_dim", lambda m, x: m.median(x, 1), [(A34,), (r(3, 4, 2),)]),
    OpInfo(
        "nanmedian",
        lambda m, x: m.nanmedian(x, 0),
        [(np.array([[1.0, np.nan], [2.0, 3.0], [5.0, np.nan]]),)],
        grad=False,
    ),
    OpInfo(
        "mode", lambda m, x: m.mode(x, -1).values, [(np.array([[1.0, 2, 2, 3, 3, 1], [4, 4, 5, 5, 5, 4]]),)], grad=False
    ),
    OpInfo(
        "searchsorted",
        lambda m, s, v: m.searchsorted(s, v),
        [(np.array([1.0, 3, 5, 7]), np.array([0.0, 3, 6, 9])), (np.sort(r(2, 4), -1), r(2, 3))],
        grad=False,
    ),
    OpInfo(
        "searchsorted_right",
        lambda m, s, v: m.searchsorted(s, v, right=True),
        [(np.array([1.0, 3, 5, 7]), np.array([[0.0, 3], [5, 9]]))],
        grad=False,
    ),
    OpInfo(
        "bucketize",
        lambda m, x, b: m.bucketize(x, b),
        [(np.array([0.0, 3, 6, 9]), np.array([1.0, 3, 5, 7]))],
        grad=False,
    ),
    # -------------------------------------------------------------- scans
    OpInfo("cumsum", lambda m, x: m.cumsum(x, 1), [(A23,), (A234,), (r(0, 3),)], gradgrad=True),
    OpInfo("cumsum_0d", lambda m, x: m.cumsum(x, 0), [(np.array(2.0),)]),
    OpInfo("cumsum_int", lambda m, x: m.cumsum(x, 0), [(Int(np.array([1, 2, 3])),)], grad=False),
    OpInfo("cumprod", lambda m, x: m.cumprod(x, 1), [(A23,), (A234,)], gradgrad=True),
    OpInfo("cumprod_zeros", lambda m, x: m.cumprod(x, 0), [(np.array([2.0, 0.0, 3.0, 0.0, 1.5]),)], gradgrad=True),
    OpInfo("cummax", lambda m, x: m.cummax(x, 1), [(A34,)]),
    OpInfo("cummin", lambda m, x: m.cummin(x, 0), [(A34,)]),
    OpInfo("logcumsumexp", lambda m, x: m.logcumsumexp(x, 1), [(A34,)], gradgrad=True),
    # -------------------------------------------------------------- shape
    OpInfo("tril", lambda m, x: m.tril(x, -1), [(A34,), (A234,)], gradgrad=True),
    OpInfo("triu", lambda m, x: m.triu(x, 1), [(A34,)]),
    OpInfo("flip", lambda m, x: m.flip(x, (0, 2)), [(A234,)]),
    OpInfo("fliplr", lambda m, x: m.fliplr(x), [(A34,)]),
    OpInfo("flipud", lambda m, x: m.flipud(x), [(A34,)]),
    OpInfo("roll", lambda m, x: m.roll(x, (1, -2), (0, 2)), [(A234,)]),
    OpInfo("roll_flat", lambda m, x: m.roll(x, 2), [(A34,)]),
    OpInfo("rot90", lambda m, x: m.rot90(x, 1, (0, 1)), [(A34,)]),
    OpInfo("rot90_k3", lambda m, x: m.rot90(x, 3, (1, 2)), [(A234,)]),
    OpInfo("repeat", lambda m, x: x.repeat(2, 1, 3), [(A34,)], gradgrad=True),
    OpInfo("tile", lambda m, x: m.tile(x, (2,)), [(A34,)]),
    OpInfo("repeat_interleave", lambda m, x: m.repeat_interleave(x, 2, dim=1), [(A23,)]),
    OpInfo("repeat_interleave_t", lambda m, x, rep: m.repeat_interleave(x, rep, dim=0), [(A23, I(1, 3))]),
    OpInfo("meshgrid", lambda m, x, y: m.meshgrid(x, y, indexing="ij"), [(r(3), r(2))]),
    OpInfo("meshgrid_xy", lambda m, x, y: m.meshgrid(x, y, indexing="xy"), [(r(3), r(2))]),
    OpInfo("broadcast_to", lambda m, x: m.broadcast_to(x, (2, 3, 4)), [(r(3, 1),)]),
    OpInfo("movedim", lambda m, x: m.movedim(x, (0, 1), (2, 0)), [(A234,)]),
    OpInfo("unflatten", lambda m, x: m.unflatten(x, 1, (2, 2)), [(A34,)]),
    OpInfo("unfold", lambda m, x: x.unfold(1, 2, 1), [(A34,), (A234,)], gradgrad=True),
    OpInfo("diag_1d", lambda m, x: m.diag(x, 1), [(r(3),)], gradgrad=True),
    OpInfo("diag_2d", lambda m, x: m.diag(x, -1), [(A34,)]),
    OpInfo("diagonal", lambda m, x: m.diagonal(x, 1, 0, 2), [(A234,)], gradgrad=True),
    OpInfo("diag_embed", lambda m, x: m.diag_embed(x, 1, 0, 2), [(A23,)]),
    OpInfo("block_diag", lambda m, x, y: m.block_diag(x, y), [(A23, r(2))]),
    OpInfo("cartesian_prod", lambda m, x, y: m.cartesian_prod(x, y), [(r(3), r(2))]),
    OpInfo("combinations", lambda m, x: m.combinations(x, 2), [(r(4),)]),
    OpInfo("combinations_rep", lambda m, x: m.combinations(x, 2, with_replacement=True), [(r(3),)]),
    # -------------------------------------------------------------- selection and scatter
    OpInfo("nonzero", lambda m, x: m.nonzero(x), [(np.array([[0.0, 1.0], [2.0, 0.0]]),), (np.array(3.0),)], grad=False),
    OpInfo(
        "nonzero_tuple", lambda m, x: m.nonzero(x, as_tuple=True), [(np.array([[0.0, 1.0], [2.0, 0.0]]),)], grad=False
    ),
    OpInfo("argwhere", lambda m, x: m.argwhere(x), [(np.array([0.0, 1.0, 2.0]),)], grad=False),
    OpInfo("masked_select", lambda m, x, k: m.masked_select(x, k), [(A23, M([True, False, True]))]),
    OpInfo("masked_scatter", lambda m, x, k, s: m.masked_scatter(x, k, s), [(A23, M([[1, 0, 1], [0, 1, 0]]), r(6))]),
    OpInfo(
        "unique",
        lambda m, x: m.unique(x, return_inverse=True, return_counts=True),
        [(np.array([3.0, 1, 1, 2, 3]),)],
        grad=False,
    ),
    OpInfo("unique_dim", lambda m, x: m.unique(x, dim=0), [(np.array([[1.0, 2], [0, 1], [1, 2]]),)], grad=False),
    OpInfo(
        "unique_consecutive",
        lambda m, x: m.unique_consecutive(x, return_inverse=True, return_counts=True),
        [(np.array([1.0, 1, 2, 2, 3, 1]),)],
        grad=False,
    ),
    *[
        OpInfo(
            f"scatter_reduce_{red}_{inc}",
            lambda m, x, i, s, red=red, inc=inc: m.scatter_reduce(x, 1, i, s, red, include_self=inc),
            [(A23, Int(np.array([[0, 0, 2], [1, 1, 1]])), r(2, 3))],
        )
        for red in ("sum", "prod", "mean", "amax", "amin")
        for inc in (True, False)
    ],
    *[
        OpInfo(
            f"scatter_reduce_prod_zeros_{inc}",
            lambda m, x, i, s, inc=inc: m.scatter_reduce(x, 1, i, s, "prod", include_self=inc),
            [
                (
                    np.array([[2.0, 0.0, 3.0], [1.0, 5.0, 0.0]]),
                    Int(np.array([[0, 0, 2], [1, 1, 1]])),
                    np.array([[0.0, 4.0, 2.0], [3.0, 0.0, 0.5]]),
                )
            ],
            # first derivatives only: the second is right only where no factor of a slot is zero
        )
        for inc in (True, False)
    ],
    OpInfo("index_copy", lambda m, x, i, s: m.index_copy(x, 1, i, s), [(A23, I(2, 0), r(2, 2))]),
    OpInfo("index_fill", lambda m, x, i: m.index_fill(x, 1, i, -1.5), [(A23, I(0, 2))]),
    *[
        OpInfo(
            f"index_reduce_{red}",
            lambda m, x, i, s, red=red: m.index_reduce(x, 0, i, s, red),
            [(A23, I(0, 0, 1), r(3, 3))],
        )
        for red in ("prod", "mean", "amax", "amin")
    ],
    OpInfo("take", lambda m, x, i: m.take(x, i), [(A23, Int(np.array([[0, 5], [-1, 2]])))]),
    OpInfo("put", lambda m, x, i, s: x.put(i, s), [(A23, I(1, 4), r(2))]),
    OpInfo("put_acc", lambda m, x, i, s: x.put(i, s, accumulate=True), [(A23, I(1, 1), r(2))]),
    OpInfo("count_nonzero", lambda m, x: m.count_nonzero(x, 0), [(np.array([[0.0, 1], [2, 0], [3, 0]]),)], grad=False),
    OpInfo("bincount", lambda m, x: m.bincount(x, minlength=6), [(Int(np.array([0, 1, 1, 4])),)], grad=False),
    OpInfo("bincount_w", lambda m, x, w: m.bincount(x, w), [(Int(np.array([0, 1, 1, 4])), r(4))], grad=False),
    OpInfo("histc", lambda m, x: m.histc(x, bins=4, min=-2, max=2), [(r(10),)], grad=False),
    # -------------------------------------------------------------- math
    *[
        OpInfo(
            f, lambda m, x, f=f: getattr(m, f)(x), [(unit(2, 3),), (np.array(0.5),), (unit(0),)], gradgrad=f == "asin"
        )
        for f in ("asin", "acos", "atan", "asinh", "atanh", "arcsin", "arctanh", "tan", "sinh", "cosh", "erfinv")
    ],
    *[
        OpInfo(f, lambda m, x, f=f: getattr(m, f)(x), [(pos(2, 3),), (np.array(1.5),)], gradgrad=f == "lgamma")
        for f in ("log2", "log10", "exp2", "lgamma", "digamma", "frac", "deg2rad", "rad2deg")
    ],
    OpInfo("acosh", lambda m, x: m.acosh(x), [(pos(2, 3) + 1,)]),
    OpInfo("polygamma", lambda m, x: m.polygamma(2, x), [(pos(2, 3),)], rtol=1e-8),
    OpInfo("lgamma_neg", lambda m, x: m.lgamma(x), [(np.array([-2.5, -0.5, 0.3, 7.2]),)]),
    OpInfo("digamma_neg", lambda m, x: m.digamma(x), [(np.array([-2.5, -0.5, 0.3, 7.2]),)]),
    OpInfo("mvlgamma", lambda m, x: m.mvlgamma(x, 3), [(pos(3) + 2,)]),
    OpInfo("i0", lambda m, x: m.i0(x), [(r(2, 3) * 20,), (np.array(0.5),), (r(0),)], gradgrad=True),
    OpInfo("special_i1", lambda m, x: m.special.i1(x), [(r(2, 3) * 20,)], gradgrad=True),
    *[  # differentiable in x only, as torch's
        OpInfo(f, lambda m, x, f=f: getattr(m, f)(x.new_tensor([[0.5], [4.0]]), x), [(pos(2, 3),)], gradgrad=True)
        for f in ("igamma", "igammac")
    ],
    OpInfo("gradient", lambda m, x: m.gradient(x, spacing=2, edge_order=2)[1], [(A34,), (r(3, 3, 4),)], gradgrad=True),
    OpInfo("gradient_coordinates", lambda m, x, c: m.gradient(x, spacing=[c], dim=1)[0], [(A34, np.cumsum(pos(4)))]),
    OpInfo("histogramdd", lambda m, x: m.histogramdd(x, [2, 3]).hist, [(r(10, 2),)], grad=False),
    OpInfo("sinc", lambda m, x: m.sinc(x), [(np.array([0.0, 0.5, -1.5]),)], grad=False),
    OpInfo("logit", lambda m, x: m.logit(x, 1e-3), [(r(4, low=0.1, high=0.9),)]),
    OpInfo("atan2", lambda m, x, y: m.atan2(x, y), [(A23, r(3)), (A23, A23)], gradgrad=True),
    OpInfo("lerp", lambda m, x, y: m.lerp(x, y, 0.3), [(A23, r(3))]),
    OpInfo("lerp_t", lambda m, x, y, w: m.lerp(x, y, w), [(A23, A23, r(3))]),
    OpInfo("logaddexp", lambda m, x, y: m.logaddexp(x, y), [(A23, r(3))], gradgrad=True),
    OpInfo("logaddexp2", lambda m, x, y: m.logaddexp2(x, y), [(A23, r(3))]),
    OpInfo("hypot", lambda m, x, y: m.hypot(x, y), [(A23, r(3))]),
    OpInfo("xlogy", lambda m, x, y: m.xlogy(x, y), [(A23, pos(2, 3))]),
    # At x = 0 the gradient is 0 by PyTorch's convention, not the one-sided difference: values only.
    OpInfo(
        "xlogy_zero",
        lambda m, x, y: m.xlogy(x, y),
        [(np.array([0.0, 1.0, 0.0]), np.array([0.0, 2.0, np.nan]))],
        grad=False,
    ),
    OpInfo("copysign", lambda m, x, y: m.copysign(x, y), [(A23, r(3))], grad=False),
    OpInfo("fmod", lambda m, x: m.fmod(x, 0.7), [(A23,)]),
    OpInfo("addmm", lambda m, x, a, b: m.addmm(x, a, b, beta=0.5, alpha=2), [(r(2, 4), A23, A34)]),
    OpInfo("addbmm", lambda m, x, a, b: m.addbmm(x, a, b), [(r(3, 2), r(2, 3, 4), r(2, 4, 2))]),
    OpInfo("baddbmm", lambda m, x, a, b: m.baddbmm(x, a, b, alpha=0.5), [(r(2, 3, 2), r(2, 3, 4), r(2, 4, 2))]),
    OpInfo("addmv", lambda m, x, a, v: m.addmv(x, a, v), [(r(2), A23, r(3))]),
    OpInfo("addr", lambda m, x, a, b: m.addr(x, a, b), [(A23, r(2), r(3))]),
    OpInfo("addcmul", lambda m, x, a, b: m.addcmul(x, a, b, value=0.5), [(A23, A23, r(3))]),
    OpInfo("addcdiv", lambda m, x, a, b: m.addcdiv(x, a, b, value=0.5), [(A23, A23, pos(3))]),
    OpInfo("outer", lambda m, x, y: m.outer(x, y), [(r(3), r(4))], gradgrad=True),
    OpInfo("cross", lambda m, x, y: m.cross(x, y, dim=1), [(r(2, 3), r(2, 3))]),
    OpInfo("linalg.cross", lambda m, x, y: m.linalg.cross(x, y), [(r(4, 3), r(1, 3))]),
    OpInfo("cdist", lambda m, x, y: m.cdist(x, y), [(r(3, 2), r(4, 2)), (r(2, 3, 2), r(2, 2, 2))]),
    OpInfo("cdist_p1", lambda m, x, y: m.cdist(x, y, p=1), [(r(3, 2), r(4, 2))]),
    OpInfo("trace", lambda m, x: m.trace(x), [(A34,)]),
    OpInfo("kron", lambda m, x, y: m.kron(x, y), [(A23, r(2, 2)), (r(2), A23)], gradgrad=True),
    OpInfo("nan_to_num", lambda m, x: m.nan_to_num(x, 0.5, 9.0, -9.0), [(np.array([1.0, np.nan, np.inf, -np.inf]),)]),
    OpInfo("nansum", lambda m, x: m.nansum(x, 1), [(np.array([[1.0, np.nan], [2.0, 3.0]]),)]),
    OpInfo("nanmean", lambda m, x: m.nanmean(x, 0), [(np.array([[1.0, np.nan], [2.0, 3.0]]),)]),
    OpInfo(
        "isclose",
        lambda m, x, y: m.isclose(x, y, equal_nan=True),
        [(np.array([1.0, np.nan, np.inf, 2.0]), np.array([1.0 + 1e-9, np.nan, np.inf, 2.1]))],
        grad=False,
    ),
    OpInfo("norm", lambda m, x: m.norm(x), [(A23,)]),
    OpInfo("norm_p", lambda m, x: m.norm(x, 3, dim=1), [(A23,)]),
    OpInfo("dist", lambda m, x, y: m.dist(x, y, 1.5), [(A23, r(3))]),
    OpInfo("renorm", lambda m, x: m.renorm(x, 2, 0, 1.0), [(A23,)]),
    # -------------------------------------------------------------- linalg
    *[
        OpInfo(f"linalg.vector_norm_{o}", lambda m, x, o=o: m.linalg.vector_norm(x, o, dim=1), [(A23,)])
        for o in (2, 1, 3, float("inf"), -float("inf"), 0)
    ],
    *[
        OpInfo(f"linalg.matrix_norm_{o}", lambda m, x, o=o: m.linalg.matrix_norm(x, o), [(A34,), (A234,)])
        for o in ("fro", "nuc", 2, -2, 1, -1, float("inf"), -float("inf"))
    ],
    OpInfo("linalg.norm", lambda m, x: m.linalg.norm(x), [(A234,)]),
    OpInfo("linalg.inv", lambda m, x: m.linalg.inv(x), [(SQ,), (np.stack([SQ, SQ.T]),)], gradgrad=True),
    OpInfo(
        "linalg.solve",
        lambda m, a, b: m.linalg.solve(a, b),
        [(SQ, r(3, 2)), (SQ, r(3)), (np.stack([SQ, SQ.T]), r(3, 1))],
        gradgrad=True,
    ),
    OpInfo("linalg.solve_right", lambda m, a, b: m.linalg.solve(a, b, left=False), [(SQ, r(2, 3))]),
    OpInfo("linalg.det", lambda m, x: m.linalg.det(x), [(SQ,), (r(2, 2, 2),)], gradgrad=True),
    # Singular: the gradient is the adjugate (finite differences agree; torch 2.x gives zeros here).
    OpInfo(
        "linalg.det_singular",
        lambda m, x: m.linalg.det(x),
        [(np.array([[1.0, 2.0], [2.0, 4.0]]),), (np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]),)],
    ),
    OpInfo("linalg.slogdet", lambda m, x: m.linalg.slogdet(x), [(SQ,)], grad=False),
    OpInfo("linalg.slogdet_logabsdet", lambda m, x: m.linalg.slogdet(x).logabsdet, [(SQ,)], gradgrad=True),
    OpInfo("logdet", lambda m, x: m.logdet(x), [(SPD_ROOT @ SPD_ROOT.T + np.eye(3),)]),
    OpInfo(
        "linalg.cholesky",
        lambda m, x: m.linalg.cholesky(x @ x.mT + m.eye(3, dtype=x.dtype, device=x.device)),
        [(SPD_ROOT,)],
        gradgrad=True,
    ),
    OpInfo("linalg.eigvalsh", lambda m, x: m.linalg.eigvalsh(x + x.mT), [(SPD_ROOT,)], gradgrad=True),
    OpInfo("linalg.eigh", lambda m, x: m.linalg.eigh(x + x.mT).eigenvectors.abs(), [(SPD_ROOT,)]),
    OpInfo(
        "linalg.svdvals",
        lambda m, x: m.linalg.svdvals(x),
        [(TALL,), (np.ascontiguousarray(TALL.T),)],
        gradgrad=True,
    ),
    OpInfo(
        "linalg.svd",
        lambda m, x: (lambda u, s, vh: (u @ vh, s))(*m.linalg.svd(x, full_matrices=False)),
        [(TALL,), (np.ascontiguousarray(TALL.T),), (SQ,)],
    ),
    OpInfo("linalg.qr", lambda m, x: m.linalg.qr(x), [(TALL,), (SQ,)]),
    OpInfo("linalg.pinv", lambda m, x: m.linalg.pinv(x), [(TALL,)]),
    OpInfo("linalg.lstsq", lambda m, a, b: m.linalg.lstsq(a, b).solution, [(TALL, r(4, 2))]),
    OpInfo("linalg.matrix_power", lambda m, x: m.linalg.matrix_power(x, -2), [(SQ,)]),
    OpInfo("linalg.matrix_power3", lambda m, x: m.linalg.matrix_power(x, 3), [(SQ,)]),
    OpInfo(
        "linalg.matrix_rank",
        lambda m, x: m.linalg.matrix_rank(x),
        [(TALL,), (np.ones((3, 3)),)],
        grad=False,
    ),
    OpInfo("linalg.multi_dot", lambda m, a, b, c: m.linalg.multi_dot([a, b, c]), [(r(3), A34, r(4))]),
    OpInfo("linalg.vander", lambda m, x: m.linalg.vander(x), [(r(4),)]),
    OpInfo("linalg.matrix_exp", lambda m, x: m.linalg.matrix_exp(x), [(r(3, 3),)]),
    *[
        OpInfo(f"special.{f}", lambda m, x, f=f: getattr(m.special, f)(x), [(x,)])
        for f, x in [
            ("expit", A23),
            ("ndtr", A23),
            ("ndtri", r(5, low=0.05, high=0.95)),
            ("log_ndtr", A23),
            ("entr", pos(2, 3)),
            ("erfcx", A23),
            ("gammaln", pos(4)),
            ("psi", pos(4)),
        ]
    ],
    OpInfo("special.xlog1py", lambda m, x, y: m.special.xlog1py(x, y), [(A23, pos(2, 3))]),
    # integer and bool inputs: the result dtypes follow torch's (floats for the math functions)
    *[
        OpInfo(f"{name}_int", fn, [(Int(np.array([[3, 1, 2], [0, 5, 4]])),)], grad=False)
        for name, fn in [
            ("asin", lambda m, x: m.asin(x // 5)),
            ("lgamma", lambda m, x: m.lgamma(x + 1)),
            ("log2", lambda m, x: m.log2(x + 1)),
            ("cumprod", lambda m, x: m.cumprod(x, 1)),
            ("sort", lambda m, x: m.sort(x, 0)),
            ("topk", lambda m, x: m.topk(x, 2)),
            ("tril", lambda m, x: m.tril(x)),
            ("flip", lambda m, x: m.flip(x, (1,))),
            ("atan2", lambda m, x: m.atan2(x, x + 1)),
            ("nansum", lambda m, x: m.nansum(x)),
            ("kron", lambda m, x: m.kron(x, x)),
            ("trace", lambda m, x: m.trace(x[:, :2])),
            ("cummax", lambda m, x: m.cummax(x, 1)),
            ("median", lambda m, x: m.median(x, 1)),
            ("count_nonzero", lambda m, x: m.count_nonzero(x)),
            ("diag", lambda m, x: m.diag(x)),
        ]
    ],
    OpInfo("sort_bool", lambda m, x: m.sort(x, 0, descending=True), [(Bool([True, False, True]),)], grad=False),
    OpInfo(
        "sort_nan", lambda m, x: m.sort(x, 0, descending=True), [(np.array([1.0, np.nan, -1.0, np.nan]),)], grad=False
    ),
    OpInfo(
        "median_nan", lambda m, x: m.median(x, 0), [(np.array([[1.0, 2.0], [np.nan, 3.0], [0.5, 4.0]]),)], grad=False
    ),
    # -------------------------------------------------------------- more_ops / numeric
    OpInfo("diff", lambda m, x: m.diff(x, dim=1), [(A34,)], gradgrad=True),
    OpInfo("diff_n2", lambda m, x, p: m.diff(x, n=2, dim=0, prepend=p), [(A34, r(1, 4))]),
    OpInfo("tensordot", lambda m, a, b: m.tensordot(a, b, 1), [(A23, A34)]),
    OpInfo("tensordot_dims", lambda m, a, b: m.tensordot(a, b, ([0, 1], [1, 0])), [(A23, r(3, 2))]),
    OpInfo("inner", lambda m, a, b: m.inner(a, b), [(A23, r(4, 3))]),
    OpInfo("vdot", lambda m, a, b: m.vdot(a, b), [(r(4), r(4))]),
    OpInfo("mv", lambda m, a, v: m.mv(a, v), [(A34, r(4))]),
    OpInfo("cov", lambda m, x: m.cov(x), [(A34,)], gradgrad=True),
    OpInfo("cov_weights", lambda m, x, w: m.cov(x, correction=0, aweights=w), [(A34, pos(4))]),
    OpInfo("corrcoef", lambda m, x: m.corrcoef(x), [(A34,)]),
    OpInfo("trapezoid", lambda m, y: m.trapezoid(y), [(A34,)]),
    OpInfo("trapezoid_x", lambda m, y, x: m.trapezoid(y, x), [(A34, np.sort(r(4)))]),
    OpInfo("cumulative_trapezoid", lambda m, y: m.cumulative_trapezoid(y, dx=0.5), [(A34,)]),
    OpInfo("histogram", lambda m, x: m.histogram(x, bins=4), [(r(10),)], grad=False),
    OpInfo("tril_indices", lambda m: m.tril_indices(3, 4, 1), [()], grad=False),
    OpInfo("triu_indices", lambda m: m.triu_indices(4, 3, -1), [()], grad=False),
    OpInfo("take_along_dim", lambda m, x, i: m.take_along_dim(x, i, 1), [(A23, Int(np.array([[2, 0], [1, 1]])))]),
    OpInfo("tensor_split", lambda m, x: m.tensor_split(x, 3, 1), [(A34,)]),
    OpInfo("tensor_split_idx", lambda m, x: m.tensor_split(x, [1, 3], 1), [(A34,)]),
    OpInfo("hstack", lambda m, a, b: m.hstack([a, b]), [(A23, A23)]),
    OpInfo("vstack", lambda m, a, b: m.vstack([a, b]), [(r(3), r(3))]),
    OpInfo("dstack", lambda m, a, b: m.dstack([a, b]), [(A23, A23)]),
    OpInfo("column_stack", lambda m, a, b: m.column_stack([a, b]), [(r(3), A23.T.copy())]),
    OpInfo("signbit", lambda m, x: m.signbit(x), [(np.array([-0.0, 0.0, -1.0, 2.0]),)], grad=False),
    OpInfo("heaviside", lambda m, x, v: m.heaviside(x, v), [(np.array([-1.0, 0.0, 2.0]), np.array([0.5]))], grad=False),
    OpInfo("fmax", lambda m, x, y: m.fmax(x, y), [(np.array([np.nan, 1, 2]), np.array([0.0, np.nan, 3]))], grad=False),
    OpInfo("fmin", lambda m, x, y: m.fmin(x, y), [(A23, r(2, 3))]),
    OpInfo("isin", lambda m, x, y: m.isin(x, y), [(Int(np.array([1, 2, 3])), Int(np.array([2, 5])))], grad=False),
    OpInfo("diagflat", lambda m, x: m.diagflat(x, 1), [(A23,)]),
    OpInfo("diagonal_scatter", lambda m, x, s: m.diagonal_scatter(x, s, 1), [(A34, r(3))]),
    OpInfo("quantile", lambda m, x: m.quantile(x, 0.3, dim=1), [(A34,)], gradgrad=True),
    OpInfo("quantile_all", lambda m, x: m.quantile(x, 0.25), [(A34,)]),
    *[
        OpInfo(
            f"quantile_{mode}",
            lambda m, x, mode=mode: m.quantile(x, 0.4, dim=0, keepdim=True, interpolation=mode),
            [(A34,)],
        )
        for mode in ("lower", "higher", "midpoint", "nearest")
    ],
    OpInfo(
        "nanquantile",
        lambda m, x: m.nanquantile(x, 0.5, dim=1),
        [(np.array([[1.0, np.nan, 3, 4], [2, 2.5, np.nan, np.nan]]),)],
        grad=False,
    ),
    OpInfo("aminmax", lambda m, x: m.aminmax(x, dim=1), [(A34,)]),
    OpInfo("std_mean", lambda m, x: m.std_mean(x, 1), [(A34,)]),
    OpInfo("var_mean", lambda m, x: m.var_mean(x, 0), [(A34,)]),
    OpInfo("rsub", lambda m, x: m.rsub(x, 2.0), [(A34,)]),
    OpInfo("ldexp", lambda m, x, e: m.ldexp(x, e), [(A34, Int(np.array([1, 2, 3, 4])))]),
    OpInfo("nuclear_norm", lambda m, x: m.nuclear_norm(x), [(A34,)]),
    OpInfo("torch.vander", lambda m, x: m.vander(x, 3), [(r(4),)]),
    OpInfo("unravel_index", lambda m, i: m.unravel_index(i, (3, 4)), [(Int(np.array([5, 7])),)], grad=False),
    *[
        OpInfo(w, lambda m, w=w: getattr(m, w)(6, dtype=m.float64), [()], grad=False)
        for w in ("hann_window", "hamming_window", "blackman_window", "bartlett_window")
    ],
    OpInfo("logspace", lambda m: m.logspace(0, 2, 5), [()], grad=False),
    *[OpInfo(f"linalg.cond_{p}", lambda m, x, p=p: m.linalg.cond(x, p), [(SQ,)]) for p in (None, -2, "fro", 1)],
    *[
        OpInfo(
            f"linalg.solve_triangular_{up}_{left}",
            lambda m, a, b, up=up, left=left: m.linalg.solve_triangular(
                a, b if left else b.mT, upper=up, left=left, unitriangular=not up
            ),
            [(SQ, r(3, 2))],
        )
        for up in (True, False)
        for left in (True, False)
    ],
    OpInfo(
        "linalg.tensorinv", lambda m, x: m.linalg.tensorinv(x, 2), [(r(2, 3, 3, 2) + np.eye(6).reshape(2, 3, 3, 2),)]
    ),
    OpInfo(
        "linalg.tensorsolve",
        lambda m, a, b: m.linalg.tensorsolve(a, b, dims=(0,)),
        [(r(6, 2, 3) + np.eye(6).reshape(6, 2, 3), r(2, 3))],
    ),
    *[
        OpInfo(
            f,
            lambda m, a, b, f=f: getattr(m, f)(a, b),
            [(Int(np.array([12, 18, 7])), Int(np.array([8, 2, 5])))],
            grad=False,
        )
        for f in ("gcd", "lcm", "bitwise_left_shift", "bitwise_right_shift")
    ],
    OpInfo("frexp", lambda m, x: m.frexp(x), [(np.array([1.5, -3.0, 0.1, 0.0]),)], grad=False),
    OpInfo("nextafter", lambda m, x, y: m.nextafter(x, y), [(A23, r(3))], grad=False),
    OpInfo("select_scatter", lambda m, x, s: m.select_scatter(x, s, 1, 2), [(A23, r(2))]),
    OpInfo("slice_scatter", lambda m, x, s: m.slice_scatter(x, s, 1, 0, 3, 2), [(A34, r(3, 2))]),
    OpInfo("einsum_ellipsis", lambda m, a, b: m.einsum("...ij,...jk->...ik", a, b), [(A234, r(1, 4, 2))]),
    OpInfo("einsum_implicit", lambda m, a, b: m.einsum("...i,i", a, b), [(A234, r(4))]),
]
