"""The optional compiled accelerator (Note [Compiled dispatch and graph] in tensor/_accelerator.py).

Whether the compiled modules are the ones running, the run-time opt-out, and that the
dispatcher's module attributes set from other modules (the compile tracer, the profiler,
autocast) are seen by the compiled code. The rest of the suite checks the semantics, and
scripts/test runs its core again with DISTRIB_PURE_PYTHON=1.
"""

from __future__ import annotations

import importlib.machinery
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import tensor
from tensor import _accelerator, _dispatch

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _built() -> bool:
    """Whether every accelerated module has a compiled extension beside its source."""
    return all(_accelerator.is_built(name) for name in _accelerator.ACCELERATED)


def test_the_compiled_modules_run_when_built():
    if _accelerator.pure_python_requested():
        pytest.skip("DISTRIB_PURE_PYTHON=1: the pure-Python pass")
    if not _built():
        pytest.skip("installed without the compiled accelerator (no Cython or C compiler at install time)")
    assert tensor._accelerated() == _accelerator.ACCELERATED
    from autograd.graph import Node

    assert not Node.__flags__ & (1 << 9), "Node is a Python class"  # Py_TPFLAGS_HEAPTYPE: not an extension type
    from tensor._tensor_base import FIELDS, TensorBase

    assert not TensorBase.__flags__ & (1 << 9), "TensorBase is a Python class"
    # Member descriptors, which the interpreter reads as fast as a __dict__; not Cython's properties.
    assert {type(vars(TensorBase)[name]).__name__ for name, _ in FIELDS} == {"member_descriptor"}
    from tensor._opdef import FIELDS as OP_FIELDS
    from tensor._opdef import OpDef

    assert not OpDef.__flags__ & (1 << 9), "OpDef is a Python class"
    assert {type(vars(OpDef)[name]).__name__ for name in OP_FIELDS} == {"member_descriptor"}
    # The public functions of plain binary ops are the dispatcher's compiled functions.
    assert type(tensor.mul).__name__ == "cython_function_or_method"
    from tensor import _arena  # built beside them (Note [Arena cache]); installed by `import tensor`

    assert _arena.installed() or os.environ.get("DISTRIB_ARENA_CACHE_MB", "").strip() == "0"


def test_tensor_fields_defaults_and_other_attributes():
    """TensorBase's fields (Note [Compiled Tensor fields]) read and write as attributes, with their
    defaults; other attributes, weak references, subclasses and __class__ assignment still work."""
    import copy
    import weakref

    from nn.parameter import Parameter
    from tensor._tensor_base import FIELDS

    t = _dispatch.make(tensor.ones(2)._data, tensor.device("cpu"))
    for name, default in FIELDS[3:]:
        value = getattr(t, name)
        assert value is default or (default == 0 and type(value) is int and value == 0), name
    for name, _ in FIELDS[:-1]:  # all but grad, whose assignments are checked (below)
        marker = object()
        setattr(t, name, marker)
        assert getattr(t, name) is marker, name
    u = tensor.ones(3)
    u.note = "kept"
    assert vars(u).get("note") == "kept" and weakref.ref(u)() is u
    p = copy.deepcopy(Parameter(u))  # deepcopy assigns __class__
    assert type(p) is Parameter and p.requires_grad and p.grad is None


def test_op_fields_read_and_write_as_attributes():
    """OpDef's fields (tensor/_opdef.py) are attributes in both modes; ``grad_fn_name`` defaults
    to PyTorch's node name for a built-in op."""
    from tensor._opdef import FIELDS, OpDef

    op = OpDef("my_op", None, (0,), False, True, False)
    fields = (op.name, op.saves, op.backward, op.operator, op.grad_fn_name)
    assert fields == ("my_op", (0,), None, None, "MyOpBackward0")
    for name in FIELDS:
        marker = object()
        setattr(op, name, marker)
        assert getattr(op, name) is marker, name
    with pytest.raises(AttributeError):
        op.unknown_field = 1  # no __dict__, as with __slots__


@pytest.mark.parametrize(
    "fn, args, expected",
    [
        (tensor.mul, (np.float32(2), 3.0), 6.0),
        (tensor.maximum, (np.float32(2), np.float32(5)), 5.0),
        (tensor.atan2, (np.float32(1), np.float32(1)), np.pi / 4),
    ],
)
def test_binary_functions_take_keywords_and_make_arrays(fn, args, expected):
    """The compiled public functions of binary ops (``_dispatch.binary_function``) take PyTorch's
    keywords, keep their names and docs, and return tensors of arrays even for 0-d operands (numpy
    makes a scalar of two 0-d arrays)."""
    a = tensor.tensor(args[0])
    b = tensor.tensor(args[1]) if isinstance(args[1], np.floating) else args[1]
    out = fn(input=a, other=b)
    assert type(out._data) is np.ndarray and out.shape == () and np.isclose(out.item(), expected)
    assert fn.__name__ == fn.__qualname__ and fn.__doc__


@pytest.mark.parametrize("fn", [tensor.mul, tensor.add, tensor.eq])
@pytest.mark.parametrize("bad", [None, [1.0]])  # a Python number first is torch.add(2, t)
def test_binary_ops_refuse_a_non_tensor_input(fn, bad):
    """A TypeError, in both modes: compiled, the dispatcher types its input TensorBase, which
    lets None through to be read as a tensor (a crash) unless it is checked."""
    with pytest.raises(TypeError):
        fn(bad, tensor.ones(2))


@pytest.mark.parametrize("bad", [None, 2.0])
def test_unary_dispatch_refuses_a_non_tensor_input(bad):
    """As above, for ``apply_unary`` (compiled, its input is typed TensorBase too)."""
    from tensor.ops.registry import OPS

    with pytest.raises(TypeError):
        _dispatch.apply_unary(OPS["exp"], bad)


def test_deleting_grad_sets_it_to_none_and_training_goes_on():
    """``del x.grad`` makes grad None, as in PyTorch; compiled, the field must not be left empty
    (compiled code reads it without a check: the next backward would crash)."""
    x = tensor.ones(3, requires_grad=True)
    (x * 2).sum().backward()
    del x.grad
    assert x.grad is None
    (x * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0, 3.0])


@pytest.mark.parametrize(
    "make_grad, error",
    [
        (lambda p: tensor.zeros(2), RuntimeError),  # size
        (lambda p: tensor.zeros(1, 3), RuntimeError),  # would broadcast into the parameter
        (lambda p: tensor.zeros(3, dtype=tensor.float64), RuntimeError),
        (lambda p: 3.0, TypeError),
        (lambda p: p, RuntimeError),  # its own grad
    ],
)
def test_assigning_a_mismatched_grad_raises_and_keeps_the_old_one(make_grad, error, torch):
    """``t.grad = g`` checks ``g`` as PyTorch does (same error types), in both builds."""
    p = tensor.zeros(3, requires_grad=True)
    p.grad = tensor.ones(3)
    with pytest.raises(error):
        p.grad = make_grad(p)
    np.testing.assert_array_equal(p.grad.numpy(), [1.0, 1.0, 1.0])
    tp = torch.zeros(3, requires_grad=True)
    bad = make_grad(tp) if make_grad(p) is not p else tp
    if isinstance(bad, tensor.Tensor):
        bad = torch.from_numpy(bad.numpy().copy())
    with pytest.raises(error):
        tp.grad = bad


def test_assigning_a_matching_grad_or_none_works():
    p = tensor.zeros(3, requires_grad=True)
    p.grad = tensor.ones(3).expand(3)
    assert p.grad.shape == (3,)
    p.grad = None
    assert p.grad is None


def test_pure_python_opt_out_loads_the_sources():
    code = "import tensor, autograd.graph as g; print(tensor._accelerated(), g.__file__.endswith('.py'))"
    env = dict(os.environ, DISTRIB_PURE_PYTHON="1")
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.split() == ["()", "True"], out.stdout + out.stderr


class _Recorder:
    """Stands in for the tracer, the profiler and autocast: notes each op it is shown."""

    def __init__(self) -> None:
        self.ops = []

    def record(self, op, via, *args) -> None:
        self.ops.append((op.name, via))

    def enter(self, op, first, inputs) -> bool:
        self.ops.append((op.name, "enter"))
        return False

    def __call__(self, op, inputs):
        self.ops.append((op.name, "autocast"))
        return inputs


@pytest.mark.parametrize("hook", ["tracer", "profiler", "autocast"])
def test_dispatcher_hooks_set_from_other_modules_are_seen(hook):
    recorder = _Recorder()
    x = tensor.ones(3, requires_grad=True)
    setattr(_dispatch, hook, recorder)
    try:
        (x * 2.0).exp().sum()
    finally:
        setattr(_dispatch, hook, None)
    assert [name for name, _ in recorder.ops] == ["mul", "exp", "sum"], recorder.ops


def test_a_compiled_module_older_than_its_source_is_not_used(tmp_path, monkeypatch):
    monkeypatch.delenv("DISTRIB_PURE_PYTHON", raising=False)
    source = tmp_path / "_dispatch.py"
    built = tmp_path / ("_dispatch" + importlib.machinery.EXTENSION_SUFFIXES[0])
    source.write_text("")
    built.write_bytes(b"")
    os.utime(source, (1000, 1000))
    os.utime(built, (2000, 2000))
    assert _accelerator._SourceFinder.find_spec("tensor._dispatch", [str(tmp_path)]) is None  # up to date
    os.utime(source, (3000, 3000))  # edited after the build
    with pytest.warns(UserWarning, match="older than"):
        spec = _accelerator._SourceFinder.find_spec("tensor._dispatch", [str(tmp_path)])
    assert spec.origin == str(source)
    monkeypatch.setenv("DISTRIB_PURE_PYTHON", "1")
    os.utime(source, (1000, 1000))
    assert _accelerator._SourceFinder.find_spec("tensor._dispatch", [str(tmp_path)]).origin == str(source)
