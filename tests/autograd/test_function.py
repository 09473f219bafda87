"""Custom ops with autograd.Function: save_for_backward, needs_input_grad, several
outputs, non-tensor arguments, mark_non_differentiable and materialized grads."""

from __future__ import annotations

import pytest

import autograd
import tensor
from autograd import Function
from tests.helpers import assert_close


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x * x


class ScaledMul(Function):
    """a * b * scale, with a Python-number argument and a record of needs_input_grad."""

    seen_needs = None

    @staticmethod
    def forward(ctx, a, b, scale):
        ctx.save_for_backward(a, b)
        ctx.scale = scale
        ScaledMul.seen_needs = ctx.needs_input_grad
        return a * b * scale

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        ga = grad * b * ctx.scale if ctx.needs_input_grad[0] else None
        gb = grad * a * ctx.scale if ctx.needs_input_grad[1] else None
        return ga, gb, None


class SplitHalves(Function):
    """Two outputs: the first and second half of a 1-d tensor."""

    @staticmethod
    def forward(ctx, x):
        n = x.shape[0] // 2
        ctx.n = n
        return x[:n].clone(), x[n:].clone()

    @staticmethod
    def backward(ctx, g1, g2):
        return tensor.cat([g1, g2])


class MaxWithIndex(Function):
    """Returns (max value, argmax); the index is marked non-differentiable."""

    @staticmethod
    def forward(ctx, x):
        index = x.argmax()
        ctx.save_for_backward(x, index)
        ctx.mark_non_differentiable(index)
        return x.max(), index

    @staticmethod
    def backward(ctx, grad_value, grad_index):
        x, index = ctx.saved_tensors
        out = tensor.zeros_like(x)
        out[index] = grad_value
        return out


class WrongBackward(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad, grad


def test_function_with_save_for_backward(device):
    x = tensor.tensor([1.0, 2.0, -3.0], device=device, requires_grad=True)
    y = Cube.apply(x)
    assert_close(y, tensor.tensor([1.0, 8.0, -27.0]))
    assert y.grad_fn is not None and y.requires_grad
    y.sum().backward()
    assert_close(x.grad, tensor.tensor([3.0, 12.0, 27.0]))


def test_function_forward_runs_without_recording(device):
    recorded = []

    class Probe(Function):
        @staticmethod
        def forward(ctx, x):
            recorded.append((x * 2).requires_grad)
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    Probe.apply(tensor.ones(1, device=device, requires_grad=True))
    assert recorded == [False]


def test_function_gradcheck(device):
    x = tensor.tensor([0.5, -1.5, 2.0], dtype=tensor.float64, device=device, requires_grad=True)
    assert autograd.gradcheck(Cube.apply, (x,))


@pytest.mark.parametrize(("a_grad", "b_grad"), [(True, True), (True, False), (False, True)])
def test_needs_input_grad_and_non_tensor_args(device, a_grad, b_grad):
    a = tensor.tensor([1.0, 2.0], device=device, requires_grad=a_grad)
    b = tensor.tensor([3.0, 4.0], device=device, requires_grad=b_grad)
    ScaledMul.apply(a, b, 0.5).sum().backward()
    assert ScaledMul.seen_needs == (a_grad, b_grad, False)
    assert (a.grad is not None) is a_grad
    assert (b.grad is not None) is b_grad
    if a_grad:
        assert_close(a.grad, tensor.tensor([1.5, 2.0]))
    if b_grad:
        assert_close(b.grad, tensor.tensor([0.5, 1.0]))


def test_function_without_grad_inputs_returns_plain_tensor(device):
    out = Cube.apply(tensor.tensor([2.0], device=device))
    assert not out.requires_grad and out.grad_fn is None


def test_function_with_multiple_outputs(device):
    x = tensor.tensor([1.0, 2.0, 3.0, 4.0], device=device, requires_grad=True)
    lo, hi = SplitHalves.apply(x)
    assert lo.grad_fn is hi.grad_fn
    (lo * 2 + hi * 3).sum().backward()
    assert_close(x.grad, tensor.tensor([2.0, 2.0, 3.0, 3.0]))


def test_multiple_outputs_unused_one_gets_materialized_zeros(device):
    x = tensor.tensor([1.0, 2.0, 3.0, 4.0], device=device, requires_grad=True)
    lo, _ = SplitHalves.apply(x)
    (lo * 5).sum().backward()
    assert_close(x.grad, tensor.tensor([5.0, 5.0, 0.0, 0.0]))


def test_mark_non_differentiable(device):
    x = tensor.tensor([1.0, 5.0, 3.0], device=device, requires_grad=True)
    value, index = MaxWithIndex.apply(x)
    assert value.requires_grad
    assert not index.requires_grad
    assert index.item() == 1
    (value * 2).backward()
    assert_close(x.grad, tensor.tensor([0.0, 2.0, 0.0]))


def test_backward_returning_too_many_gradients_raises(device):
    x = tensor.tensor([1.0], device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="returned an incorrect number of gradients"):
        WrongBackward.apply(x).sum().backward()


def test_function_returning_an_input_gives_a_new_tensor_with_history(device):
    class Identity(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * 7

    x = tensor.tensor([1.0], device=device, requires_grad=True)
    y = Identity.apply(x)
    assert y is not x and x.is_leaf and not y.is_leaf
    y.sum().backward()
    assert_close(x.grad, tensor.tensor([7.0]))


def test_saved_tensor_modified_in_place_raises(device):
    x = tensor.tensor([1.0, 2.0], device=device, requires_grad=True)
    h = x * 1
    y = Cube.apply(h)
    with tensor.no_grad():
        h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_function_without_forward_or_backward_raises():
    class Empty(Function):
        pass

    with pytest.raises(NotImplementedError, match="You must implement the forward function"):
        Empty.apply(tensor.ones(1))


def test_custom_function_grad_fn_name_is_class_name_plus_backward(device):
    x = tensor.ones(2, device=device, requires_grad=True)
    assert Cube.apply(x).grad_fn.name() == "CubeBackward"
    assert ScaledMul.apply(x, x, 2.0).grad_fn.name() == "ScaledMulBackward"


def test_too_few_gradients_raise_as_torch():
    class OnlyOne(Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, g):
            return g

    a, b = tensor.ones(2, requires_grad=True), tensor.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        OnlyOne.apply(a, b).sum().backward()


def test_mark_dirty_rebases_the_input_on_the_function(torch):
    def run(lib, function):
        class AddOne(function):
            @staticmethod
            def forward(ctx, x):
                x.add_(1)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 2

        a = lib.ones(2, requires_grad=True)
        x = a * 3
        y = AddOne.apply(x)
        (y * y).sum().backward()
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad has been used in an in-place"):
            AddOne.apply(lib.ones(2, requires_grad=True))
        return y is x, x.tolist(), a.grad.tolist()

    assert run(tensor, Function) == run(torch, torch.autograd.Function) == (True, [4.0, 4.0], [48.0, 48.0])


def test_setup_context_vjp_and_once_differentiable(torch):
    def run(lib, autograd_module):
        class Scale(autograd_module.Function):
            @staticmethod
            def forward(a, k):
                return a * k

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.k = inputs[1]

            @staticmethod
            def vjp(ctx, g):
                return g * ctx.k, None

        class Square(autograd_module.Function):
            @staticmethod
            def forward(ctx, a):
                ctx.save_for_backward(a)
                return a**2

            @staticmethod
            @autograd_module.function.once_differentiable
            def backward(ctx, g):
                (a,) = ctx.saved_tensors
                return 2 * a * g

        a = lib.tensor([1.0, 2.0], requires_grad=True)
        (Scale.apply(a, 3.0).sum() + Square.apply(a).sum()).backward()
        return a.grad.tolist()

    assert run(tensor, autograd) == run(torch, torch.autograd) == [5.0, 7.0]

    class Both(Function):
        @staticmethod
        def forward(ctx, a):
            return a * 1

        @staticmethod
        def backward(ctx, g):
            return g

        @staticmethod
        def vjp(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="both 'backward' and 'vjp'"):
        Both.apply(tensor.ones(1, requires_grad=True)).sum().backward()


def test_non_tensor_output_gets_none_as_its_gradient(torch):
    def run(mod):
        class Op(mod.autograd.Function):
            @staticmethod
            def forward(ctx, x, k):
                return x * k, k

            @staticmethod
            def backward(ctx, g, g_k):
                assert g_k is None
                return g * 3, None

        x = mod.tensor([1.0, 2.0], requires_grad=True)
        y, k = Op.apply(x, 3)
        y.sum().backward()
        return x.grad.tolist(), k

    assert run(tensor) == run(torch) == ([3.0, 3.0], 3)


def test_save_for_backward_of_a_non_tensor_raises_type_error(torch):
    for mod in (torch, tensor):
        class Op(mod.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x, 3)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g

        with pytest.raises(TypeError, match="argument 1 is of type int"):
            Op.apply(mod.ones(2, requires_grad=True))


def test_a_second_backward_reruns_a_function_without_saves_and_refuses_one_with_saves(torch):
    """As PyTorch: the ctx outlives a backward; only its saved tensors are freed."""
    results = []
    for lib, base in ((tensor, autograd.Function), (torch, torch.autograd.Function)):
        class Double(base):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

        class Square(base):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 2 * x * g

        x = lib.ones(2, requires_grad=True)
        y = Double.apply(x).sum()
        y.backward()
        y.backward()
        y = Square.apply(x).sum()
        y.backward()
        with pytest.raises(RuntimeError, match="second time"):
            y.backward()
        results.append(x.grad.tolist())
    assert results[0] == results[1] == [6.0, 6.0]
