"""Helpers for comparing our layers with torch's (the optional oracle): copy weights across,
run both on the same input, and compare outputs and every gradient."""

from __future__ import annotations

import numpy as np

import tensor
from tests.helpers import assert_close, to_numpy


def to_torch(torch, t, requires_grad=False):
    """A torch tensor with ``t``'s values (a host copy)."""
    out = torch.from_numpy(np.array(to_numpy(t)))
    return out.requires_grad_(requires_grad) if requires_grad else out


def copy_state(ours, theirs, torch) -> None:
    """Give torch module ``theirs`` our module's parameters and buffers (matched by name)."""
    with torch.no_grad():
        for name, t in theirs.state_dict(keep_vars=True).items():
            mine = ours.state_dict()[name]
            t.copy_(to_torch(torch, mine))


def run_both(ours, theirs, torch, *inputs, rtol=1e-5, atol=1e-6, grad_inputs=True):
    """Run both modules on ``inputs`` (arrays), backprop a fixed random cotangent, and compare the
    outputs, the input gradients and every parameter gradient."""
    ours_in, torch_in = [], []
    for a in inputs:
        a = np.asarray(a)
        floating = a.dtype.kind == "f"
        ours_in.append(tensor.tensor(a, requires_grad=grad_inputs and floating))
        torch_in.append(to_torch(torch, a, requires_grad=grad_inputs and floating))
    out, ref = ours(*ours_in), theirs(*torch_in)
    assert_close(out, ref.detach().numpy(), rtol=rtol, atol=atol)
    cot = np.random.default_rng(1).standard_normal(ref.shape).astype(ref.detach().numpy().dtype)
    (out * tensor.tensor(cot)).sum().backward()
    (ref * torch.from_numpy(cot)).sum().backward()
    for mine, theirs_t in zip(ours_in, torch_in):
        if theirs_t.requires_grad:
            assert_close(mine.grad, theirs_t.grad.numpy(), rtol=rtol, atol=atol)
    ours_params = dict(ours.named_parameters())
    for name, p in theirs.named_parameters():
        if p.grad is None:
            assert ours_params[name].grad is None, name
        else:
            assert_close(ours_params[name].grad, p.grad.numpy(), rtol=rtol, atol=atol)
    return out, ref
