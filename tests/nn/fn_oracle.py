"""Compare a functional form of ours with torch's: the same float64 inputs, values, then the
gradient of every floating input under a fixed random cotangent."""

from __future__ import annotations

import numpy as np

import tensor
from tests.helpers import assert_close
from tests.nn.oracle import to_torch


def check_fn(ours_fn, torch_fn, torch, *arrays, rtol=1e-6, atol=1e-8, grads=True, n_grad=None):
    """Run ``ours_fn(*tensors)`` and ``torch_fn(*torch_tensors)``; compare outputs and gradients.
    Integer arrays (and floating ones after the first ``n_grad``) are passed without gradients;
    returns our output."""
    ours_in, torch_in = [], []
    for i, a in enumerate(arrays):
        a = np.asarray(a)
        needs = grads and a.dtype.kind == "f" and (n_grad is None or i < n_grad)
        ours_in.append(tensor.tensor(a, requires_grad=needs))
        torch_in.append(to_torch(torch, a, requires_grad=needs))
    out, ref = ours_fn(*ours_in), torch_fn(*torch_in)
    assert_close(out, ref.detach().numpy(), rtol=rtol, atol=atol)
    if grads and ref.requires_grad:
        cot = np.random.default_rng(7).standard_normal(ref.shape).astype(ref.detach().numpy().dtype)
        (out * tensor.tensor(cot)).sum().backward()
        (ref * torch.from_numpy(cot)).sum().backward()
        for mine, theirs in zip(ours_in, torch_in):
            if theirs.requires_grad:
                expected = theirs.grad.numpy() if theirs.grad is not None else np.zeros(theirs.shape)
                assert_close(
                    mine.grad if mine.grad is not None else tensor.zeros(*mine.shape, dtype=mine.dtype),
                    expected,
                    rtol=rtol,
                    atol=atol,
                )
    return out
