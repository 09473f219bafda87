"""Derivatives that compute on arrays outside create_graph (mul's and exp's, issue 19), and the
accelerator's rule that one stale compiled module sends every accelerated module to its source
(the compiled engine reads graph's ``Node`` as a C struct)."""

from __future__ import annotations

import importlib.machinery
import os

import numpy as np
import pytest

import autograd
import tensor
from tensor import _accelerator, _dispatch
from tests.helpers import assert_close


def _grads(create_graph, device):
    """Gradients of a mixed chain (tensor, scalar, 0-d float64 and broadcast factors, exp), by
    backward without (array rules) or with create_graph (the dispatcher's path)."""
    x = tensor.tensor([0.5, -1.0, 2.0], device=device, requires_grad=True)
    c = tensor.tensor([[1.5], [0.25]], device=device, requires_grad=True)
    d = tensor.tensor(3.0, dtype=tensor.float64, device=device)  # promotes nothing: the result stays float32
    s = tensor.tensor(0.75, device=device, requires_grad=True)  # 0-d: numpy's products are scalars
    y = ((x * c * 0.5).exp() * d * s).exp() * x
    return autograd.grad(y.sum(), (x, c, s), create_graph=create_graph)


def test_array_rules_match_the_dispatched_rules(device):
    plain = _grads(False, device)
    recorded = _grads(True, device)
    for p, r in zip(plain, recorded):
        assert p.dtype is tensor.float32 and p.shape == r.shape
        assert_close(p, r.detach())
    assert not any(g.requires_grad for g in plain) and all(g.requires_grad for g in recorded)


def test_array_rules_still_check_saved_versions(device):
    x = tensor.ones(3, device=device, requires_grad=True)
    y = x * 2
    z = y * y
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
    e = (x * 1.0).exp()
    e.mul_(2)
    with pytest.raises(RuntimeError, match="output 0 of ExpBackward0"):
        e.sum().backward()


def test_a_dispatcher_hook_still_sees_the_derivatives_ops():
    seen = []

    def autocast(op, inputs):  # stands in for an open autocast region: notes each op dispatched
        seen.append(op.name)
        return inputs

    x = tensor.ones(3, requires_grad=True)
    y = (x * 2.0).exp().sum()
    _dispatch.autocast = autocast
    try:
        y.backward()
    finally:
        _dispatch.autocast = None
    assert seen.count("mul") == 2, seen  # exp's g * out and mul's g * 2.0
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(2.0) * np.ones(3), rtol=1e-6)


def test_one_stale_compiled_module_sends_every_accelerated_module_to_its_source(tmp_path, monkeypatch):
    monkeypatch.delenv("DISTRIB_PURE_PYTHON", raising=False)
    package = tmp_path / "autograd"
    package.mkdir()
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    for stem in ("graph", "engine"):
        (package / f"{stem}.py").write_text("")
        (package / f"{stem}{suffix}").write_bytes(b"")
        os.utime(package / f"{stem}.py", (1000, 1000))
        os.utime(package / f"{stem}{suffix}", (2000, 2000))
    assert _accelerator._SourceFinder.find_spec("autograd.engine", [str(package)]) is None
    os.utime(package / "graph.py", (3000, 3000))  # graph.py edited after the build
    with pytest.warns(UserWarning, match="autograd.graph is older than its source"):
        spec = _accelerator._SourceFinder.find_spec("autograd.engine", [str(package)])
    assert spec.origin == str(package / "engine.py")
