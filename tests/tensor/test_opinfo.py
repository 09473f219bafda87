"""Conformance of the issue-16 ops with torch: values, shapes and dtypes (float32 and float64, on
every device the op supports, contiguous and non-contiguous inputs), then float64 gradients
with ``gradcheck`` and, where marked, ``gradgradcheck``. The table is in ``tests/tensor/opinfo.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensor
from autograd import gradcheck, gradgradcheck
from tests.tensor.opinfo import OPS, Bool, Int

CASES = [(op, i) for op in OPS for i in range(len(op.samples))]
IDS = [f"{op.name}-{i}" for op, i in CASES]
# Non-contiguous views only exist for inputs with 2 or more dims: only those samples are re-run.
NONCONTIG_CASES = [
    (op, i) for op, i in CASES if any(not isinstance(v, (Int, Bool)) and np.ndim(v) >= 2 for v in op.samples[i])
]
NONCONTIG_IDS = [f"{op.name}-{i}" for op, i in NONCONTIG_CASES]
# (samples whose differentiable inputs are all empty have nothing to check)
GRAD_CASES = [
    (op, i) for op, i in CASES
    if op.grad and any(not isinstance(v, (Int, Bool)) and np.size(v) > 0 for v in op.samples[i])
]
GRAD_IDS = [f"{op.name}-{i}" for op, i in GRAD_CASES]


def _make(lib, value, dtype, device, requires_grad=False, noncontiguous=False):
    if isinstance(value, (Int, Bool)):
        t = lib.tensor(value.value)
        return t.to(device) if device != "cpu" else t
    array = np.asarray(value, dtype=dtype)
    if noncontiguous and array.ndim >= 2:  # the same values, seen through a transposed view
        t = lib.tensor(np.ascontiguousarray(np.swapaxes(array, 0, 1))).transpose(0, 1)
    else:
        t = lib.tensor(array)
    if device != "cpu":
        t = t.to(device)
    return t.requires_grad_() if requires_grad else t


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [x for o in out for x in _flat(o)]
    return [out]


def _host(x):
    if isinstance(x, (bool, int, float)):
        return np.asarray(x)
    return np.asarray(x.detach().cpu().numpy())


def _dtype_name(x):
    return str(x.dtype).replace("torch.", "").replace("tensor.", "") if hasattr(x, "dtype") else type(x).__name__


def _compare(ours, ref, op):
    ours, ref = _flat(ours), _flat(ref)
    assert len(ours) == len(ref), f"{op.name}: {len(ours)} outputs, torch gives {len(ref)}"
    for k, (a, b) in enumerate(zip(ours, ref)):
        assert tuple(_host(a).shape) == tuple(_host(b).shape), f"{op.name} output {k}: shape"
        assert _dtype_name(a) == _dtype_name(b), f"{op.name} output {k}: dtype {_dtype_name(a)} vs {_dtype_name(b)}"
        np.testing.assert_allclose(
            _host(a), _host(b), rtol=op.rtol, atol=op.atol, equal_nan=True, err_msg=f"{op.name} output {k}"
        )


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("op,i", CASES, ids=IDS)
def test_values_match_torch(torch, device, op, i, dtype):
    sample = op.samples[i]
    ours = op.fn(tensor, *[_make(tensor, v, dtype, device) for v in sample])
    ref = op.fn(torch, *[_make(torch, v, dtype, "cpu") for v in sample])
    if dtype is np.float32:
        op = type(op)(**{**op.__dict__, "rtol": max(op.rtol, 2e-4), "atol": max(op.atol, 1e-5)})
    _compare(ours, ref, op)


@pytest.mark.parametrize("op,i", NONCONTIG_CASES, ids=NONCONTIG_IDS)
def test_noncontiguous_inputs_match_torch(torch, op, i):
    sample = op.samples[i]
    ours = op.fn(tensor, *[_make(tensor, v, np.float64, "cpu", noncontiguous=True) for v in sample])
    ref = op.fn(torch, *[_make(torch, v, np.float64, "cpu") for v in sample])
    _compare(ours, ref, op)


def _float_outputs(out):
    return tuple(o for o in _flat(out) if hasattr(o, "dtype") and o.dtype.is_floating_point)


@pytest.mark.parametrize("op,i", GRAD_CASES, ids=GRAD_IDS)
def test_gradients(op, i):
    sample = op.samples[i]
    args = [_make(tensor, v, np.float64, "cpu", requires_grad=not isinstance(v, (Int, Bool))) for v in sample]

    def fn(*xs):
        return _float_outputs(op.fn(tensor, *xs))

    assert gradcheck(fn, tuple(args), atol=1e-6)
    if op.gradgrad:
        assert gradgradcheck(fn, tuple(args), atol=1e-5)
