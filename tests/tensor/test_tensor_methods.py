"""torch.Tensor methods added from other functions (tensor/_tensor_methods.py): bound functions,
in-place forms, in-place view ops, random fills, fill_diagonal_, new, apply_/map_, attributes,
and round(decimals=): against numpy, closed forms, and torch where it is installed."""

from __future__ import annotations

import numpy as np
import pytest

import tensor
from tests.conftest import CUDA_SKIP_REASON

A = np.array([[1.0, 2.0], [3.0, 4.0]])
I = np.array([6, 3, 5])


def _a(device):
    return tensor.tensor(A, dtype=tensor.float32, device=device)


def test_bound_functions_match_numpy(device):
    a, i = _a(device), tensor.tensor(I, device=device)
    assert i.bitwise_and(3).tolist() == (I & 3).tolist()
    assert i.bitwise_xor(1).tolist() == (I ^ 1).tolist()
    assert i.bitwise_not().tolist() == (~I).tolist()
    assert i.bitwise_left_shift(1).tolist() == (I << 1).tolist()
    assert i.gcd(tensor.tensor([4, 9, 10], device=device)).tolist() == np.gcd(I, [4, 9, 10]).tolist()
    assert i.lcm(tensor.tensor([4, 9, 10], device=device)).tolist() == np.lcm(I, [4, 9, 10]).tolist()
    np.testing.assert_allclose(a.matrix_power(3).cpu().numpy(), np.linalg.matrix_power(A, 3), rtol=1e-6)
    np.testing.assert_allclose(a.pinverse().cpu().numpy(), np.linalg.pinv(A), rtol=1e-4)
    np.testing.assert_allclose(a.erfc().cpu().numpy() + a.erf().cpu().numpy(), np.ones((2, 2)), rtol=1e-6)
    assert a.adjoint().tolist() == A.T.tolist()
    # where: self is the value where the condition holds (torch.where(condition, self, other))
    assert a.where(a > 2, tensor.zeros(2, 2, device=device)).tolist() == np.where(A > 2, A, 0).tolist()
    mantissa, exponent = a.frexp()
    np.testing.assert_array_equal(mantissa.cpu().numpy() * 2.0 ** exponent.cpu().numpy(), A)


def test_in_place_forms_keep_the_dtype(device):
    a = _a(device)
    a.eq_(tensor.tensor([[1.0, 0.0], [3.0, 0.0]], device=device))
    assert a.dtype == tensor.float32 and a.tolist() == [[1.0, 0.0], [1.0, 0.0]]
    mask = tensor.tensor([True, False, True], device=device)
    mask.logical_and_(tensor.tensor([True, True, False], device=device))
    assert mask.tolist() == [True, False, False]
    b = _a(device)
    b.remainder_(3)
    assert b.tolist() == (A % 3).tolist()
    c = _a(device)
    c.subtract_(1, alpha=2)
    assert c.tolist() == (A - 2).tolist()
    d = tensor.tensor(I, device=device)
    d.floor_divide_(2)
    assert d.tolist() == (I // 2).tolist()


def test_float_power_in_place_needs_double(device):
    with pytest.raises(RuntimeError, match="has dtype Float but the operation's result requires dtype Double"):
        _a(device).float_power_(2)
    d = _a(device).double()
    d.float_power_(2)
    assert d.tolist() == (A**2).tolist()


def test_in_place_views(device):
    a = _a(device)
    assert a.unsqueeze_(0) is a and a.shape == (1, 2, 2)
    a.squeeze_(0)
    a.t_()
    assert a.tolist() == A.T.tolist()
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        tensor.ones(2, device=device, requires_grad=True).unsqueeze_(0)
    w = tensor.tensor([1.0, 2.0], device=device, requires_grad=True)
    y = w * 3
    y.unsqueeze_(1)
    (y * tensor.tensor([[1.0], [10.0]], device=device)).sum().backward()
    assert y.shape == (2, 1) and w.grad.tolist() == [3.0, 30.0]


def test_random_fills(device):
    tensor.manual_seed(0)
    e = tensor.empty(20000, device=device).exponential_(2.0)
    assert float(e.min()) >= 0 and abs(float(e.mean()) - 0.5) < 0.02
    g = tensor.empty(20000, device=device).geometric_(0.25)
    assert float(g.min()) >= 1 and abs(float(g.mean()) - 4.0) < 0.15
    ln = tensor.empty(20000, dtype=tensor.float64, device=device).log_normal_(0.0, 0.5)
    assert abs(float(ln.log().mean())) < 0.02 and abs(float(ln.log().std()) - 0.5) < 0.02
    c = tensor.empty(20000, device=device).cauchy_(1.0, 2.0)
    assert abs(float(c.median()) - 1.0) < 0.1
    r = tensor.empty(1000, dtype=tensor.int64, device=device).random_(2, 5)
    assert set(r.tolist()) == {2, 3, 4}
    assert set(tensor.empty(1000, device=device).random_(3).tolist()) == {0.0, 1.0, 2.0}
    assert set(tensor.empty(100, dtype=tensor.bool, device=device).random_().tolist()) == {False, True}
    p = tensor.tensor([1.0, 0.0, 1.0], device=device)
    assert tensor.empty(3, device=device).bernoulli_(p).tolist() == [1, 0, 1]
    for fill, message in ((lambda t: t.exponential_(-1), "lambda > 0.0"),
                          (lambda t: t.geometric_(0), r"p to be in \(0, 1\)"),
                          (lambda t: t.log_normal_(1, 0), "std > 0.0"), (lambda t: t.random_(5, 2), "from=5 >= to=2")):
        with pytest.raises(RuntimeError, match=message):
            fill(tensor.empty(2, device=device))


def test_random_fills_follow_the_seed(device):
    tensor.manual_seed(3)
    first = tensor.empty(5, device=device).exponential_().tolist()
    tensor.manual_seed(3)
    assert tensor.empty(5, device=device).exponential_().tolist() == first


@pytest.mark.parametrize(("shape", "wrap"), [((3, 3), False), ((5, 2), True), ((5, 2), False), ((2, 5), False),
                                             ((7, 3), True)])
def test_fill_diagonal_as_numpy(device, shape, wrap):
    expected = np.zeros(shape)
    np.fill_diagonal(expected, 5.0, wrap=wrap)
    assert tensor.zeros(*shape, device=device).fill_diagonal_(5.0, wrap=wrap).tolist() == expected.tolist()


def test_fill_diagonal_of_a_cube_and_errors(device):
    cube = tensor.zeros(2, 2, 2, device=device).fill_diagonal_(1.0)
    assert cube.sum().item() == 2 and cube[1, 1, 1].item() == 1
    with pytest.raises(RuntimeError, match="dimensions must larger than 1"):
        tensor.zeros(3, device=device).fill_diagonal_(1)
    with pytest.raises(RuntimeError, match="equal length"):
        tensor.zeros(2, 3, 3, device=device).fill_diagonal_(1)


def test_legacy_new(device):
    a = _a(device)
    assert a.new(2, 3).shape == (2, 3) and a.new(2).dtype == tensor.float32
    assert a.new().shape == (0,)
    assert a.new((3,)).tolist() == [3.0]  # a tuple is data
    assert a.new(tensor.Size([3])).shape == (3,)  # a Size is sizes
    alias = a.new(a)
    alias[0, 0] = 9
    assert a[0, 0].item() == 9
    with pytest.raises(TypeError, match="expected tensor.float32"):
        a.new(tensor.tensor(I, device=device))


def test_apply_and_map_on_the_cpu():
    e = tensor.ones(3)
    assert e.apply_(lambda v: v * 3).tolist() == [3.0, 3.0, 3.0]
    assert e.map_(tensor.tensor([1.0, 2.0, 3.0]), lambda x, y: x + y).tolist() == [4.0, 5.0, 6.0]
    with pytest.raises(RuntimeError, match="Can't call apply_\\(\\) on Variable that requires grad"):
        tensor.ones(2, requires_grad=True).apply_(lambda v: v)


def test_attributes(device):
    a = _a(device)
    assert (a.nelement(), a.ndimension()) == (4, 2)
    assert a.layout is tensor.strided and repr(tensor.strided) == "tensor.strided"
    assert a.H.tolist() == A.T.tolist() and a.mH.tolist() == A.T.tolist()
    z = tensor.tensor([[1 + 2j]], device=device)
    assert z.H.tolist() == [[1 - 2j]]
    with pytest.raises(RuntimeError, match="only supported on matrices \\(2-D tensors\\). Got 1-D"):
        tensor.ones(2, device=device).H
    with pytest.raises(RuntimeError, match="matrices or batches of matrices. Got 1-D"):
        tensor.ones(2, device=device).mH
    assert a.get_device() == (-1 if device == "cpu" else 0)
    y = tensor.ones(2, device=device, requires_grad=True) * 2
    assert not y.retains_grad
    y.retain_grad()
    assert y.retains_grad and y.output_nr == 0
    assert not a.is_pinned() and a.dim_order() == (0, 1) and a.t().dim_order() == (1, 0)
    assert a.is_set_to(a) and not a.is_set_to(a.clone())
    assert a.narrow_copy(0, 1, 1).tolist() == [[3.0, 4.0]]
    assert tensor.ones(3, device=device).resize_(2, 2).shape == (2, 2)


@pytest.mark.skipif(CUDA_SKIP_REASON is None, reason="a CUDA device is present: pinning works there")
def test_pin_memory_without_a_gpu_is_a_clear_error():
    with pytest.raises(RuntimeError, match="none is available"):
        tensor.ones(2).pin_memory()


def test_round_to_decimals(device):
    values = np.array([1.2345, 2.5, -0.555, 0.125, 0.135, 1234.5], dtype=np.float32)
    t = tensor.tensor(values, device=device)
    np.testing.assert_array_equal(t.round(decimals=2).cpu().numpy(), np.round(values, 2))
    np.testing.assert_array_equal(tensor.round(t, decimals=-2).cpu().numpy(), np.round(values, -2))
    assert t.round(decimals=0).tolist() == np.round(values).tolist()
    x = tensor.tensor([1.2345], device=device, requires_grad=True)
    x.round(decimals=2).sum().backward()
    assert x.grad.tolist() == [0.0]
    with pytest.raises(NotImplementedError, match="decimals=1"):
        tensor.tensor([3], device=device).round(decimals=1)


CASES = [
    "a.erf()", "i.bitwise_and(3)", "i.gcd(torch.tensor([4, 9, 10]))", "a.matrix_power(2)",
    "a.where(a > 2, torch.zeros(2, 2))",
    "a.select_scatter(torch.zeros(2), 0, 0)", "a.slice_scatter(torch.zeros(1, 2), 0, 0, 1)", "a.unsafe_chunk(2)[1]",
    "a.clone().lt_(3)", "a.clone().remainder_(3)", "a.clone().sign_()", "a.clone().divide_(2, rounding_mode='floor')",
    "a.clone().polygamma_(1)", "a.clone().mvlgamma_(2)", "a.mH", "torch.zeros(5, 2).fill_diagonal_(1, wrap=True)",
    "a.new([1, 2])", "a.narrow_copy(0, 1, 1)", "a.prelu(torch.tensor([0.5]))", "(-a).hardshrink(2.5)",
    "torch.round(torch.tensor([1.2345, 2.5, -0.555, 0.135]), decimals=2)",
]


@pytest.mark.parametrize("expression", CASES)
def test_agrees_with_torch(torch, expression):
    def run(lib):
        return eval(expression, {"torch": lib, "a": lib.tensor(A, dtype=lib.float32), "i": lib.tensor(I)})  # noqa: S307

    ours, theirs = run(tensor), run(torch)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.gpu
@pytest.mark.skipif(CUDA_SKIP_REASON is not None, reason=f"no CUDA device: {CUDA_SKIP_REASON}")
def test_pin_memory_with_a_gpu():
    t = tensor.arange(4.0)
    pinned = t.pin_memory()
    assert pinned.is_pinned() and not t.is_pinned() and pinned[1:].is_pinned()
    assert pinned.device.type == "cpu" and pinned.tolist() == t.tolist()
