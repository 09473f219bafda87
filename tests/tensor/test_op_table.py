"""The op table: every primitive has a kernel and a derivative, or is declared non-differentiable;
and ``saves=`` decides what a recorded node keeps alive and checks at backward."""

from __future__ import annotations

import weakref

import pytest

import tensor
from tensor import _dispatch
from tensor.ops.registry import OPS, OpDef, defop


@pytest.mark.parametrize("name", sorted(OPS))
def test_every_op_has_kernel_and_derivative_rule(name):
    op = OPS[name]
    assert callable(op.kernel), f"op {name} has no kernel"
    if op.differentiable:
        assert callable(op.backward), f"op {name} is differentiable but has no derivative rule"
    else:
        assert op.backward is None, f"op {name} is declared non-differentiable but has a rule"


def test_table_holds_the_core_primitives():
    expected = {
        "add",
        "sub",
        "mul",
        "div",
        "pow",
        "exp",
        "log",
        "sum",
        "amax",
        "matmul",
        "view",
        "permute",
        "expand",
        "cat",
        "getitem",
        "index_put",
        "gather",
        "where",
    }
    assert expected <= set(OPS)


def test_registering_a_name_twice_is_refused():
    with pytest.raises(ValueError, match="registered twice"):
        defop("add")(lambda xp, a, b: a)


def test_every_op_is_registered_under_its_own_name():
    assert all(isinstance(op, OpDef) and op.name == name for name, op in OPS.items())


@pytest.fixture
def scaled_product():
    """A throwaway op ``a * b`` whose derivative reads only ``b`` (saved) and the output."""
    op = defop("test_scaled_product", saves=(1,), saves_output=True)(lambda xp, a, b: a * b)
    op.derivative(lambda node, g: (g * node.saved[0], g * node.output / node.saved[0]))
    yield op
    del OPS["test_scaled_product"]


def test_saves_decides_what_backward_reads_and_what_stays_alive(scaled_product):
    x = tensor.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = tensor.tensor([4.0, 5.0, 6.0], requires_grad=True)
    a, b = x * 1, y * 1
    out = _dispatch.apply(scaled_product, (a, b))
    (saved,) = out.grad_fn.saved  # b's storage and history (an intermediate is kept as its array)
    assert saved.data_ptr() == b.data_ptr() and saved.grad_fn is b.grad_fn
    unsaved = weakref.ref(a)
    del a
    assert unsaved() is None  # an input the derivative does not read is not kept for backward
    out.sum().backward()
    assert x.grad.tolist() == [4.0, 5.0, 6.0] and y.grad.tolist() == [1.0, 2.0, 3.0]


def test_saved_input_modified_in_place_is_refused_at_backward(scaled_product):
    a = tensor.ones(3, requires_grad=True) * 1
    b = tensor.ones(3, requires_grad=True) * 1
    out = _dispatch.apply(scaled_product, (a, b))
    a.add_(1)  # not saved: backward does not need its old value
    out.sum().backward(retain_graph=True)
    b.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()
