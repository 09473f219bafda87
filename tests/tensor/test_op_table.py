"""The op table: every primitive has a kernel and a derivative, or is declared non-differentiable."""

from __future__ import annotations

import pytest

import tensor  # noqa: F401 - registers every op
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
    expected = {"add", "sub", "mul", "div", "pow", "exp", "log", "sum", "amax", "matmul",
                "view", "permute", "expand", "cat", "getitem", "index_put", "gather", "where"}
    assert expected <= set(OPS)


def test_registering_a_name_twice_is_refused():
    with pytest.raises(ValueError, match="registered twice"):
        defop("add")(lambda xp, a, b: a)


def test_opdef_repr_names_the_op():
    assert repr(OPS["mul"]) == "<op mul>"
    assert isinstance(OPS["mul"], OpDef)
