"""``tensor/ops/complex_ops.py``: ``angle`` of real inputs (its infinities, NaN, -0.0 and dtypes), ``polar``'s
dtype checks, and ``view_as_real``/``view_as_complex`` as views (memory, geometry, errors, gradients)."""

from __future__ import annotations

import math

import pytest

import tensor
from tests.helpers import assert_close


@pytest.mark.parametrize("values,dtype", [
    ([0.0, -0.0, -1.0, math.nan, math.inf, -math.inf], "float32"),
    ([0.0, -1.0, math.inf, -math.inf], "float16"),
    ([1.0, -2.0], "bfloat16"),
    ([0, -1, 3], "int64"),
    ([True, False], "bool"),
])
def test_angle_of_real_inputs_matches_torch(torch, values, dtype):
    ours = tensor.angle(tensor.tensor(values, dtype=getattr(tensor, dtype)))
    theirs = torch.angle(torch.tensor(values, dtype=getattr(torch, dtype)))
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    assert_close(ours.double(), theirs.double().numpy())


def test_angle_of_real_inputs_has_a_zero_gradient():
    x = tensor.tensor([-1.0, 2.0, math.inf], requires_grad=True)
    tensor.angle(x).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("abs_dtype,angle_dtype", [
    ("int64", "float32"), ("float32", "int64"), ("float32", "float64"), ("float64", "float32"),
    ("float16", "float16"), ("bfloat16", "bfloat16"), ("float64", "float64"),
])
def test_polar_refuses_dtypes_as_torch(torch, abs_dtype, angle_dtype):
    results = []
    for lib in (tensor, torch):
        try:
            out = lib.polar(lib.ones(2, dtype=getattr(lib, abs_dtype)), lib.ones(2, dtype=getattr(lib, angle_dtype)))
            results.append(out.dtype.name if lib is tensor else str(out.dtype).removeprefix("torch."))
        except Exception as exc:  # noqa: BLE001 - the class is the result compared
            results.append(type(exc).__name__)
    assert results[0] == results[1]


def _complex_grid(lib):
    return lib.tensor([[1 + 2j, 3 - 1j, 0.5j], [-2 + 0j, 4 + 4j, -1 - 1j]], dtype=lib.complex64)


# complex inputs of several geometries: contiguous, transposed, sliced (with a storage offset),
# strided, 0-d
COMPLEX_VIEWS = {
    "contiguous": lambda z: z,
    "transposed": lambda z: z.t(),
    "offset": lambda z: z[:, 1:],
    "strided": lambda z: z[:, ::2],
    "0-d": lambda z: z[1, 2],
}


@pytest.mark.parametrize("name", sorted(COMPLEX_VIEWS))
def test_view_as_real_is_a_view_as_torch(torch, name):
    geometries = []
    for lib in (tensor, torch):
        z = _complex_grid(lib)
        pairs = lib.view_as_real(COMPLEX_VIEWS[name](z))
        assert pairs._base is z
        geometries.append((tuple(pairs.shape), pairs.stride(), pairs.storage_offset(), pairs.tolist()))
        version = z._version
        pairs[..., 1] = 7.0  # through the view into the complex tensor, and back
        assert z._version == pairs._version == version + 1
        assert (COMPLEX_VIEWS[name](z).imag == 7.0).all()
        z.mul_(0)
        assert (pairs == 0).all()
    assert geometries[0] == geometries[1]


def test_view_as_complex_is_a_view_of_the_pairs():
    pairs = tensor.tensor([[1.0, 2.0], [3.0, 4.0]])
    z = tensor.view_as_complex(pairs)
    assert z._base is pairs and z.tolist() == [1 + 2j, 3 + 4j]
    z[1] = 5j
    assert pairs.tolist() == [[1.0, 2.0], [0.0, 5.0]] and pairs._version == z._version == 1


# real inputs of several geometries: PyTorch views them as complex only when the last dim has
# size 2 and stride 1, and the other strides (of dims longer than 1) and the offset are even
REAL_VIEWS = {
    "contiguous": lambda lib: lib.arange(6.0).view(3, 2),
    "permuted": lambda lib: lib.arange(8.0).view(2, 2, 2).permute(1, 0, 2),
    "expanded": lambda lib: lib.arange(2.0).expand(3, 2),
    "float64 every third row": lambda lib: lib.arange(12.0, dtype=lib.float64).view(6, 2)[::3],
    "odd stride of a 1-long dim": lambda lib: lib.arange(9.0).view(3, 3)[:1, :2],
    "last stride 2": lambda lib: lib.arange(12.0).view(3, 4)[:, ::2],
    "transposed": lambda lib: lib.arange(6.0).view(2, 3).t(),
    "odd offset": lambda lib: lib.arange(5.0)[1:3],
    "odd stride": lambda lib: lib.arange(12.0).view(4, 3)[:, :2],
    "odd stride, odd offset": lambda lib: lib.arange(12.0).view(4, 3)[1:, :2],
    "last size 3": lambda lib: lib.arange(3.0),
    "0-d": lambda lib: lib.tensor(1.0),
    "int": lambda lib: lib.arange(4).view(2, 2),
}


@pytest.mark.parametrize("name", sorted(REAL_VIEWS))
def test_view_as_complex_geometry_and_errors_match_torch(torch, name):
    results = []
    for lib in (tensor, torch):
        try:
            z = lib.view_as_complex(REAL_VIEWS[name](lib))
            results.append((str(z.dtype).split(".")[-1], tuple(z.shape), z.stride(), z.storage_offset(), z.tolist()))
        except RuntimeError as exc:
            results.append(str(exc).replace("half, ", ""))  # complex32 is not supported here
    assert results[0] == results[1]


def test_view_as_real_of_a_real_tensor_raises_as_torch():
    with pytest.raises(RuntimeError, match="view_as_real is only supported for complex tensors"):
        tensor.view_as_real(tensor.ones(2))


def test_view_as_real_and_view_as_complex_gradients_match_torch(torch):
    grads = []
    for lib in (tensor, torch):
        z = lib.tensor([1 + 2j, 3 - 1j, 0.5j], dtype=lib.complex128, requires_grad=True)
        pairs = lib.tensor([[1.0, 2.0], [-3.0, 4.0]], dtype=lib.float64, requires_grad=True)
        weights = lib.arange(6.0, dtype=lib.float64).view(3, 2)
        # the sum's gradient is expanded (stride 0): the derivatives must not need a contiguous one
        ((lib.view_as_real(z.t()) * weights).sum() + lib.view_as_real(z).sum()).backward()
        (lib.view_as_complex(pairs).abs().sum() + lib.view_as_complex(pairs).real.sum()).backward()
        grads.append((z.grad.tolist(), pairs.grad.numpy()))
    assert grads[0][0] == grads[1][0]
    assert_close(grads[0][1], grads[1][1])


def test_in_place_writes_through_view_as_real_and_view_as_complex_train_as_torch(torch):
    # The write reaches the base through the view; autograd's replay writes the view's dtype
    # (it cast the value to the base's: a complex gradient lost its imaginary part).
    results = []
    for lib in (tensor, torch):
        z = lib.tensor([1 + 2j, 3 - 1j], dtype=lib.complex64, requires_grad=True)
        w = z * 1
        lib.view_as_real(w).mul_(lib.tensor([[2.0, 3.0], [4.0, 5.0]]))
        (w.abs() ** 2).sum().backward()
        x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        y = x * 1
        lib.view_as_complex(y).mul_(lib.tensor([1j, 2], dtype=lib.complex64))
        (y**2).sum().backward()
        results.append([t.detach().numpy() for t in (w, z.grad, y, x.grad)])
    for ours, theirs in zip(*results):
        assert_close(ours, theirs, rtol=1e-6)


def test_real_and_imag_are_views_that_train_as_torch(torch):
    results = []
    for lib in (tensor, torch):
        z = lib.tensor([1 + 2j, 3 - 1j], dtype=lib.complex64)
        z.real[0] = 9.0
        z.imag.mul_(2)
        a = lib.tensor([1 + 2j, 3 - 1j], dtype=lib.complex64, requires_grad=True)
        b = a * 1
        b.real.mul_(lib.tensor([2.0, 3.0]))
        b.imag.add_(lib.tensor([1.0, 1.0]))
        (b.abs() ** 2).sum().backward()
        results.append([t.detach().numpy() for t in (z, b, a.grad)] + [z.real.stride(), z.imag.stride()])
    for ours, theirs in zip(results[0][:3], results[1][:3]):
        assert_close(ours, theirs, rtol=1e-6)
    assert results[0][3:] == results[1][3:]  # the strides: views of the pairs
