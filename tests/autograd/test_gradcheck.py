"""gradcheck and gradgradcheck: they accept correct derivatives and reject wrong ones."""

from __future__ import annotations

import pytest

import autograd
import tensor
from autograd import Function, GradcheckError


def _input(values, device, requires_grad=True):
    return tensor.tensor(values, dtype=tensor.float64, device=device, requires_grad=requires_grad)


class BadSquare(Function):
    """x**2 with a backward that is off by a factor (returns x instead of 2x)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x


CORRECT_FUNCTIONS = [
    ("tanh", lambda x: x.tanh()),
    ("mul-self", lambda x: x * x),
    ("sum-dim", lambda x: (x.exp() * 2).sum(0)),
    ("matmul", lambda x: x @ x.t()),
    ("broadcast", lambda x: x * tensor.tensor([1.0, -2.0], dtype=tensor.float64, device=x.device)),
    ("transpose", lambda x: x.t().sin()),
]


@pytest.mark.parametrize(("name", "fn"), CORRECT_FUNCTIONS, ids=[c[0] for c in CORRECT_FUNCTIONS])
def test_gradcheck_returns_true_for_correct_derivatives(device, name, fn):
    x = _input([[0.3, -0.7], [1.1, 0.4]], device)
    assert autograd.gradcheck(fn, (x,)) is True


def test_gradcheck_with_several_inputs_and_a_non_tensor(device):
    a, b = _input([0.5, 1.5], device), _input([2.0, -1.0], device)
    assert autograd.gradcheck(lambda a, b, k: (a * b + a) * k, (a, b, 3.0))


def test_gradcheck_raises_on_a_function_with_a_wrong_backward(device):
    x = _input([0.5, -1.0, 2.0], device)
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
        autograd.gradcheck(BadSquare.apply, (x,))


def test_gradcheck_error_is_a_runtime_error():
    assert issubclass(GradcheckError, RuntimeError)


def test_gradcheck_without_raise_returns_false(device):
    x = _input([0.5, -1.0], device)
    assert autograd.gradcheck(BadSquare.apply, (x,), raise_exception=False) is False


def test_gradcheck_needs_an_input_that_requires_grad(device):
    x = _input([1.0], device, requires_grad=False)
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        autograd.gradcheck(lambda t: t * 2, (x,))


def test_gradcheck_warns_on_float32_inputs(device):
    x = tensor.tensor([1.0, 2.0], device=device, requires_grad=True)
    with pytest.warns(UserWarning, match="not float64"):
        autograd.gradcheck(lambda t: t * 2, (x,), eps=1e-2, atol=1e-3)


def test_gradgradcheck_accepts_correct_second_derivatives(device):
    x = _input([0.3, -0.7, 1.2], device)
    assert autograd.gradgradcheck(lambda t: (t * t * t).sin(), (x,))


def test_gradgradcheck_rejects_a_backward_that_is_not_differentiable_correctly(device):
    class DetachedBackward(Function):
        """Correct first derivative of x**3, but computed outside the graph."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * (3 * x * x).detach()

    x = _input([0.5, -1.0], device)
    assert autograd.gradcheck(DetachedBackward.apply, (x,))
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        autograd.gradgradcheck(DetachedBackward.apply, (x,))


def test_complex_inputs_and_outputs_are_checked_as_torch(torch):
    """A complex output counts as its real and imaginary parts, a complex input's gradient is
    dL/dx + i dL/dy (Note [Complex gradcheck]); a wrong complex gradient fails."""
    w = [0.5 - 2j, 1 + 1j]
    functions = {
        "real of a square": lambda lib, z: (z * z).real,
        "product": lambda lib, z: z * lib.tensor(w, dtype=lib.complex128),
        "modulus": lambda lib, z: z.abs(),
        "as real pairs": lambda lib, z: lib.view_as_real(z * z.conj()),
    }
    for name, f in functions.items():
        for lib, check in ((tensor, autograd.gradcheck), (torch, torch.autograd.gradcheck)):
            z = lib.tensor([1 + 1j, 2 - 1j], dtype=lib.complex128, requires_grad=True)
            assert check(lambda z, f=f, lib=lib: f(lib, z), (z,), raise_exception=False), (name, lib.__name__)

    class WrongSquare(autograd.Function):
        @staticmethod
        def forward(ctx, z):
            return z * z

        @staticmethod
        def backward(ctx, g):
            return g * 2  # misses the conjugate of 2z

    z = tensor.tensor([1 + 1j, 2 - 1j], dtype=tensor.complex128, requires_grad=True)
    assert WrongSquare.apply(z).requires_grad  # complex outputs of a Function are differentiable
    assert not autograd.gradcheck(WrongSquare.apply, (z,), raise_exception=False)
