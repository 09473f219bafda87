"""tensor.fft and the complex dtypes against torch: values, dtypes and shapes of every transform
(with ``n``/``s``, ``dim`` and each ``norm``), gradients of real-to-real chains with
gradcheck/gradgradcheck and, for complex inputs, against torch's (Wirtinger) gradients;
complex promotion and the complex helpers (real, imag, angle, view_as_real, ...)."""

from __future__ import annotations

import numpy as np
import pytest

import tensor
from autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(61)
X = RNG.standard_normal((3, 8))
XC = X + 1j * RNG.standard_normal((3, 8))
X3 = RNG.standard_normal((2, 4, 6))

TRANSFORMS = [
    ("fft", X, {}),
    ("fft", XC, {"n": 5, "norm": "ortho"}),
    ("fft", X3, {"dim": 1, "norm": "forward"}),
    ("ifft", XC, {"n": 10, "norm": "forward"}),
    ("rfft", X, {}),
    ("rfft", X, {"n": 7, "norm": "ortho"}),
    ("irfft", XC[:, :5], {}),
    ("irfft", XC[:, :5], {"n": 9, "norm": "forward"}),
    ("fft2", X3, {}),
    ("ifft2", X3, {"norm": "ortho"}),
    ("rfft2", X3, {}),
    ("irfft2", X3 + 0j, {}),
    ("fftn", X3, {"s": (3, 5)}),
    ("ifftn", XC, {"dim": (0,)}),
    ("rfftn", X3, {}),
    ("irfftn", X3 + 0j, {"s": (4, 10)}),
    ("hfft", XC[:, :5], {}),
    ("ihfft", X, {"norm": "ortho"}),
    ("fftshift", X, {}),
    ("ifftshift", X3, {"dim": 1}),
    ("fft", X.astype(np.float32), {}),
    ("rfft", X.astype(np.float32), {}),
    ("irfft", XC.astype(np.complex64), {}),
    ("hfft2", X3 + 1j * X3[::-1], {}),
    ("hfftn", X3 + 1j * X3[::-1], {"s": (3, 5), "dim": (0, 2), "norm": "ortho"}),
    ("hfftn", XC, {"dim": 0}),
    ("ihfft2", X3, {"s": (2, 6)}),
    ("ihfftn", X3, {"dim": (-1, 0), "norm": "forward"}),
]


@pytest.mark.parametrize("name,x,kwargs", TRANSFORMS, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(TRANSFORMS)])
def test_transforms_match_torch(torch, device, name, x, kwargs):
    ours = getattr(tensor.fft, name)(tensor.tensor(x, device=device), **kwargs)
    assert ours.device.type == device
    ref = getattr(torch.fft, name)(torch.tensor(x), **kwargs).resolve_conj()
    assert ours.shape == tuple(ref.shape)
    assert ours.dtype.name == str(ref.dtype).replace("torch.", "")
    np.testing.assert_allclose(ours.cpu().numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)


def test_frequencies_match_torch(torch):
    for n in (1, 4, 5):
        np.testing.assert_allclose(tensor.fft.fftfreq(n, 0.5).numpy(), torch.fft.fftfreq(n, 0.5).numpy())
        np.testing.assert_allclose(tensor.fft.rfftfreq(n).numpy(), torch.fft.rfftfreq(n).numpy())
    assert tensor.fft.fftfreq(4).dtype is tensor.float32


def _r(v):
    return tensor.view_as_real(v)


def _c(v, shape):
    return tensor.view_as_complex(v.reshape(shape))


GRAD_CHAINS = {
    "fft": lambda v: _r(tensor.fft.fft(v)),
    "fft_n_ortho": lambda v: _r(tensor.fft.fft(v, n=5, norm="ortho")),
    "ifft_pad": lambda v: _r(tensor.fft.ifft(v, n=11)),
    "rfft": lambda v: _r(tensor.fft.rfft(v)),
    "rfft_forward": lambda v: _r(tensor.fft.rfft(v, norm="forward")),
    "irfft": lambda v: tensor.fft.irfft(_c(v, (3, 4, 2))),
    "irfft_n_ortho": lambda v: tensor.fft.irfft(_c(v, (3, 4, 2)), n=7, norm="ortho"),
    "rfft2": lambda v: _r(tensor.fft.rfft2(v)),
    "irfft2": lambda v: tensor.fft.irfft2(_c(v, (3, 4, 2))),
    "hfft": lambda v: tensor.fft.hfft(_c(v, (3, 4, 2))),
    "ihfft": lambda v: _r(tensor.fft.ihfft(v)),
    "fftshift": lambda v: tensor.fft.fftshift(v),
    "abs_angle": lambda v: tensor.stack([_c(v, (12, 2)).abs(), _c(v, (12, 2)).angle()]),
    "real_imag_conj": lambda v: tensor.stack([tensor.real(_c(v, (12, 2)).conj()), _c(v, (12, 2)).conj().imag]),
    "complex_polar": lambda v: _r(tensor.polar(v[0].abs() + 0.5, v[1])),
}


@pytest.mark.parametrize("name", sorted(GRAD_CHAINS))
def test_gradients_of_real_chains(device, name):
    x = tensor.tensor(X, requires_grad=True, device=device)
    assert gradcheck(GRAD_CHAINS[name], (x,))
    # abs's rule treats sign(z) as constant: no double backward for complex. Second derivatives are
    # device-independent compositions: checked on the CPU only, to keep the stand-in pass short.
    if device == "cpu" and not name.startswith("abs"):
        assert gradgradcheck(GRAD_CHAINS[name], (x,))


@pytest.mark.parametrize(
    "name,kwargs", [("fft", {}), ("ifft", {"norm": "ortho"}), ("irfft", {}), ("irfft", {"n": 9}), ("fft2", {})]
)
def test_complex_input_gradients_match_torch(torch, name, kwargs):
    z = XC[:, :5] if name == "irfft" else XC
    ours, ref = tensor.tensor(z, requires_grad=True), torch.tensor(z, requires_grad=True)
    out_ours, out_ref = getattr(tensor.fft, name)(ours, **kwargs), getattr(torch.fft, name)(ref, **kwargs)
    w = RNG.standard_normal(tuple(out_ref.shape))
    (tensor.real(out_ours) * tensor.tensor(w)).sum().backward()
    (out_ref.real * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), ref.grad.numpy(), atol=1e-10)


@pytest.mark.parametrize("name", ["hfftn", "ihfftn"])
def test_hermitian_n_d_gradients_match_torch(torch, name):
    x = XC[:, :5] if name == "hfftn" else X
    ours, ref = tensor.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out_ours, out_ref = getattr(tensor.fft, name)(ours), getattr(torch.fft, name)(ref)
    w = RNG.standard_normal(tuple(out_ref.shape))
    (tensor.real(out_ours) * tensor.tensor(w)).sum().backward()
    (out_ref.real * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), ref.grad.numpy(), atol=1e-10)


@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn"])
@pytest.mark.parametrize(
    "shape,kwargs",
    [
        ((4,), {"s": (3, 4)}),
        ((4, 4), {"dim": (0, 0)}),
        ((4, 4), {"dim": (1, -1)}),
        ((4, 4), {"s": (4,), "dim": (0, 1)}),
    ],
)
def test_bad_s_and_dim_raise_as_torch(torch, name, shape, kwargs):
    with pytest.raises(RuntimeError):
        getattr(torch.fft, name)(torch.ones(shape), **kwargs)
    with pytest.raises(RuntimeError):
        getattr(tensor.fft, name)(tensor.ones(shape), **kwargs)


@pytest.mark.parametrize("name", ["rfft2", "irfft2", "rfftn", "irfftn"])
def test_real_transforms_need_a_dim(torch, name):
    for kwargs in ({"dim": ()}, {"s": ()}):
        if name.endswith("2") and "s" in kwargs:
            continue
        with pytest.raises(RuntimeError):
            getattr(torch.fft, name)(torch.ones(4, 4), **kwargs)
        with pytest.raises(RuntimeError, match="at least one axis"):
            getattr(tensor.fft, name)(tensor.ones(4, 4), **kwargs)


def test_norm_and_input_errors(torch):
    with pytest.raises(RuntimeError, match="normalization"):
        tensor.fft.fft(tensor.ones(4), norm="bad")
    with pytest.raises(RuntimeError, match="real input"):
        tensor.fft.rfft(tensor.tensor(XC))
    with pytest.raises(RuntimeError, match="data points"):
        tensor.fft.fft(tensor.ones(4), n=0)


@pytest.mark.parametrize(
    "a,b",
    [
        ("complex64", "float64"),
        ("complex64", "float32"),
        ("complex128", "float32"),
        ("complex64", "int64"),
        ("complex64", "complex128"),
        ("float16", "complex64"),
    ],
)
def test_complex_promotion_matches_torch(torch, a, b):
    ours = tensor.promote_types(getattr(tensor, a), getattr(tensor, b))
    assert ours.name == str(torch.promote_types(getattr(torch, a), getattr(torch, b))).replace("torch.", "")
    if not a.startswith("complex"):
        return
    x = tensor.ones(2, dtype=getattr(tensor, b)) + tensor.tensor(1j, dtype=getattr(tensor, a))
    y = torch.ones(2, dtype=getattr(torch, b)) + torch.tensor(1j, dtype=getattr(torch, a))
    if y.dtype != torch.complex32:
        assert x.dtype.name == str(y.dtype).replace("torch.", "")


def test_complex_helpers_match_torch(torch):
    z, zt = tensor.tensor(XC), torch.tensor(XC)
    assert tensor.tensor([1 + 2j]).dtype is tensor.complex64 and tensor.tensor([1.0]).is_complex() is False
    for ours, ref in [
        (z.real, zt.real),
        (z.imag, zt.imag),
        (z.angle(), zt.angle()),
        (z.abs(), zt.abs()),
        (tensor.view_as_real(z), torch.view_as_real(zt)),
        (z.conj(), zt.conj().resolve_conj()),
        (tensor.angle(tensor.tensor([-1.0, 2.0])), torch.angle(torch.tensor([-1.0, 2.0]))),
    ]:
        np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-12)
    with pytest.raises(RuntimeError):
        tensor.tensor([1.0]).imag
    with pytest.raises(RuntimeError, match="last dimension of size 2"):
        tensor.view_as_complex(tensor.ones(3))


def test_eig_matches_torch(torch, device):
    A = RNG.standard_normal((3, 3))
    values = tensor.linalg.eigvals(tensor.tensor(A, device=device)).cpu().numpy()
    ref = torch.linalg.eigvals(torch.tensor(A)).numpy()
    np.testing.assert_allclose(np.sort_complex(values), np.sort_complex(ref), atol=1e-10)
    vals, vecs = (v.cpu().numpy() for v in tensor.linalg.eig(tensor.tensor(A, device=device)))
    np.testing.assert_allclose(A @ vecs, vecs * vals[None, :], atol=1e-10)


@pytest.mark.parametrize("equation", [None, "ij,jk->ik", "ij,j->i"])
def test_complex_matmul_and_einsum_gradients_match_torch(torch, equation):
    a = RNG.standard_normal((2, 3)) + 1j * RNG.standard_normal((2, 3))
    b = RNG.standard_normal((3, 2)) + 1j * RNG.standard_normal((3, 2))
    if equation == "ij,j->i":
        b = b[:, 0].copy()
    grads = []
    for lib, wrap in (
        (tensor, lambda v: tensor.tensor(v, requires_grad=True)),
        (torch, lambda v: torch.tensor(v, requires_grad=True)),
    ):
        x, y = wrap(a), wrap(b)
        out = x @ y if equation is None else lib.einsum(equation, x, y)
        (
            lib.view_as_real(out) * lib.tensor(np.linspace(-1, 1, 2 * out.numel()).reshape(*out.shape, 2))
        ).sum().backward()
        grads.append((x.grad.numpy(), y.grad.numpy()))
    for ours, ref in zip(*grads):
        np.testing.assert_allclose(ours, ref, atol=1e-12)


def test_complex_repr_matches_torch(torch):
    for values, dtype in (
        ([1 + 2j, 3 - 1j], "complex64"),
        ([0.1748 - 0.5485j, 2.25 + 1j], "complex64"),
        ([1 + 2j], "complex128"),
    ):
        ours = repr(tensor.tensor(values, dtype=getattr(tensor, dtype)))
        assert ours == repr(torch.tensor(values, dtype=getattr(torch, dtype))).replace("torch.", "tensor.")


@pytest.mark.parametrize("op", ["mul", "div"])
@pytest.mark.parametrize("kinds", ["cc", "cr", "rc"])
def test_complex_mul_div_values_and_gradients_match_torch(torch, op, kinds):
    # holomorphic ops conjugate their operands in the gradient; a real operand takes the real part
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(4) + (1j * rng.standard_normal(4) if k == "c" else 0) for k in kinds]
    weights = np.array([1.3, 0.7])
    results = []
    for lib in (tensor, torch):
        a, b = (lib.tensor(x, requires_grad=True) for x in arrays)
        y = a * b if op == "mul" else a / b
        (lib.view_as_real(y) * lib.tensor(weights)).sum().backward()
        results.append([t.detach().numpy() for t in (y, a.grad, b.grad)])
    for ours, theirs in zip(*results):
        assert ours.dtype == theirs.dtype
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-14)


def test_fftn_takes_an_int_s():
    assert tensor.fft.fftn(tensor.ones(4, 5), s=3, dim=1).shape == (4, 3)
    assert tensor.fft.rfftn(tensor.ones(4, 5), s=3).shape == (4, 2)


def test_fftfreq_refuses_integer_and_complex_dtypes():
    for fn in (tensor.fft.fftfreq, tensor.fft.rfftfreq):
        with pytest.raises(RuntimeError):
            fn(4, dtype=tensor.int64)
        with pytest.raises(NotImplementedError):
            fn(4, dtype=tensor.complex64)
        assert fn(4, dtype=tensor.float64).dtype is tensor.float64
