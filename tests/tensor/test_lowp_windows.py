"""Window and pooling kernels on bfloat16 run in float32 and round once (Note [Low-precision
pooling] in tensor/ops/pool.py): max pooling (forward, indices, gradient) is bit-identical to the
float32 computation on the same values, and overlapping sums (col2im, the max-pool gradient)
accumulate in float32, against torch."""

from __future__ import annotations

import ml_dtypes
import numpy as np

import nn.functional as F
import tensor

BF16 = ml_dtypes.bfloat16


def _bf16(array):
    return tensor.from_numpy(np.asarray(array, np.float32)).to(tensor.bfloat16)


def test_max_pool_in_bfloat16_matches_float32_and_torch(torch):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 9, 9)).astype(BF16).astype(np.float32)
    x[0, 0, 2, 2] = np.nan
    x[1, 2, :3, :3] = 1.0  # ties: the first maximum wins
    g = rng.standard_normal((2, 3, 5, 5)).astype(BF16).astype(np.float32)
    args = {"kernel_size": 3, "stride": 2, "padding": 1}  # overlapping windows, padded
    results = []
    for dtype in (tensor.bfloat16, tensor.float32):
        xt = tensor.from_numpy(x).to(dtype).requires_grad_()
        out, idx = F.max_pool2d(xt, return_indices=True, **args)
        out.backward(tensor.from_numpy(g).to(dtype))
        assert out.dtype is dtype and xt.grad.dtype is dtype
        results.append((out.detach().float().numpy(), idx.numpy(), xt.grad.float().numpy()))
    (out, idx, grad), (out32, idx32, grad32) = results
    np.testing.assert_array_equal(out, out32)
    np.testing.assert_array_equal(idx, idx32)
    np.testing.assert_array_equal(grad, grad32.astype(BF16).astype(np.float32))  # summed in float32, rounded once
    tx = torch.from_numpy(x).to(torch.bfloat16).requires_grad_()
    tout, tidx = torch.nn.functional.max_pool2d(tx, return_indices=True, **args)
    tout.backward(torch.from_numpy(g).to(torch.bfloat16))
    np.testing.assert_array_equal(out, tout.detach().float().numpy())
    np.testing.assert_array_equal(idx, tidx.numpy())
    np.testing.assert_array_equal(grad, tx.grad.float().numpy())


def test_max_pool_gradient_without_overlap_picks_bfloat16_bits_as_torch(torch):
    # Non-overlapping windows: put_windows picks on the bits (Note [Low-precision pooling]), so
    # infinities, NaNs and negative gradients arrive unchanged and every other element is +0.0.
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    for specials in (False, True):
        g = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
        if specials:
            g[0, 0, 0, :3] = [np.inf, -np.inf, np.nan]
        xt = tensor.from_numpy(x).to(tensor.bfloat16).requires_grad_()
        F.max_pool2d(xt, 2).backward(tensor.from_numpy(g).to(tensor.bfloat16))
        tx = torch.from_numpy(x).to(torch.bfloat16).requires_grad_()
        torch.nn.functional.max_pool2d(tx, 2).backward(torch.from_numpy(g).to(torch.bfloat16))
        assert xt.grad.dtype is tensor.bfloat16
        ours, theirs = xt.grad.numpy().view(np.uint16), tx.grad.view(torch.int16).numpy().view(np.uint16)
        np.testing.assert_array_equal(ours, theirs, err_msg=f"specials={specials}")


def test_fold_in_bfloat16_accumulates_in_float32():
    # Three windows (kernel 3, stride 1) overlap on output element 2, adding 256, then 1, then 1
    # (kernel offsets in order): a bfloat16 running sum stays 256 (256 + 1 rounds to even), a
    # float32 one gives 258, which bfloat16 holds.
    cols = np.zeros((1, 3, 3), np.float32)  # (N, C * K, L)
    cols[0, 0, 2], cols[0, 1, 1], cols[0, 2, 0] = 256.0, 1.0, 1.0
    out = F.fold(_bf16(cols), output_size=(1, 5), kernel_size=(1, 3))
    assert out.dtype is tensor.bfloat16
    np.testing.assert_array_equal(out.float().numpy().ravel(), [0.0, 0.0, 258.0, 0.0, 0.0])


def test_conv_backward_in_bfloat16_matches_float32_rounded_once(torch):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 2, 7, 7)).astype(BF16).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 3)).astype(BF16).astype(np.float32)
    grads = []
    for dtype in (tensor.bfloat16, tensor.float32):
        xt = tensor.from_numpy(x).to(dtype).requires_grad_()
        F.conv2d(xt, tensor.from_numpy(w).to(dtype), padding=1).sum().backward()
        grads.append(xt.grad.float().numpy())
    # The input gradient is a GEMM (float32, rounded) then col2im: within two bfloat16 roundings
    # of the float32 gradient, and close to torch's.
    np.testing.assert_allclose(grads[0], grads[1], rtol=2**-7, atol=1e-2)
    tx = torch.from_numpy(x).to(torch.bfloat16).requires_grad_()
    torch.nn.functional.conv2d(tx, torch.from_numpy(w).to(torch.bfloat16), padding=1).sum().backward()
    np.testing.assert_allclose(grads[0], tx.grad.float().numpy(), rtol=2**-7, atol=1e-2)


def test_bfloat16_arithmetic_and_comparisons_bit_identical_to_ml_dtypes():
    # add/sub/mul/div and the comparisons run bfloat16 through float32 (tensor/_backend.py
    # in_float32): the same bits as ml_dtypes' per-element loops, specials included.
    rng = np.random.default_rng(2)
    a = np.concatenate([rng.standard_normal(500) * 100, [np.inf, -np.inf, np.nan, 0.0, -0.0, 3e38]]).astype(BF16)
    b = np.concatenate([rng.standard_normal(500), [1.0, np.inf, 2.0, -0.0, 0.0, 3e38]]).astype(BF16)
    ta, tb = tensor.from_numpy(a), tensor.from_numpy(b)
    for name, ufunc in [
        ("add", np.add),
        ("sub", np.subtract),
        ("mul", np.multiply),
        ("div", np.true_divide),
        ("eq", np.equal),
        ("lt", np.less),
        ("ge", np.greater_equal),
    ]:
        ours = getattr(tensor, name)(ta, tb).numpy()
        expected = ufunc(a, b)
        assert ours.dtype == expected.dtype, name
        np.testing.assert_array_equal(
            ours.view(np.uint16) if ours.dtype == BF16 else ours,
            expected.view(np.uint16) if expected.dtype == BF16 else expected,
            err_msg=name,
        )
