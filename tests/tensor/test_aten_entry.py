"""ATen entry points at top level (tensor/_aten_norm.py, tensor/_aten_entry.py) against torch, or,
where torch runs them on CUDA only (the synchronized-batch-norm kernels, native_norm), against
what they compose to (issue 16)."""

from __future__ import annotations

import numpy as np
import pytest

import tensor

pytestmark = pytest.mark.usefixtures("torch_one_thread")  # tests/tensor/conftest.py


def _close(ours, theirs, atol=1e-12):
    """Tuples (or single tensors) of ours and torch's agree in shape and value."""
    ours = ours if isinstance(ours, (tuple, list)) else (ours,)
    theirs = theirs if isinstance(theirs, (tuple, list)) else (theirs,)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert tuple(o.shape) == tuple(t.shape)
        np.testing.assert_allclose(o.detach().cpu().numpy(), t.detach().cpu().numpy(), atol=atol, rtol=1e-10)


def test_native_norms_match_torch(torch, device):
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal((4, 6, 5)), rng.standard_normal(6), rng.standard_normal(6)
    ours = {k: tensor.tensor(v, device=device) for k, v in dict(x=x, w=w, b=b).items()}
    ref = {k: torch.tensor(v) for k, v in dict(x=x, w=w, b=b).items()}
    running = rng.standard_normal(6), rng.uniform(0.5, 2.0, 6)
    our_stats = [tensor.tensor(r, device=device) for r in running]
    ref_stats = [torch.tensor(r) for r in running]
    for training in (True, False):
        _close(tensor.native_batch_norm(ours["x"], ours["w"], ours["b"], *our_stats, training, 0.1, 1e-5),
               torch.native_batch_norm(ref["x"], ref["w"], ref["b"], *ref_stats, training, 0.1, 1e-5))  # fmt: skip
        _close(our_stats, ref_stats)  # updated in place in training
    _close(tensor.native_layer_norm(ours["x"], [6, 5], ours["x"][0], None, 1e-5),
           torch.native_layer_norm(ref["x"], [6, 5], ref["x"][0], None, 1e-5))  # fmt: skip
    _close(tensor.native_group_norm(ours["x"], ours["w"], ours["b"], 4, 6, 5, 3, 1e-5),
           torch.native_group_norm(ref["x"], ref["w"], ref["b"], 4, 6, 5, 3, 1e-5))  # fmt: skip
    for dim in (-1, 0, 1, 2):
        _close(tensor.norm_except_dim(ours["x"], 3, dim), torch.norm_except_dim(ref["x"], 3, dim))
    # torch runs native_norm on CUDA/sparse tensors only: it is linalg.vector_norm
    _close(tensor.native_norm(ours["x"]), torch.linalg.vector_norm(ref["x"]))
    _close(tensor.native_norm(ours["x"], 3, [1], True, None), torch.linalg.vector_norm(ref["x"], 3, [1], True))
    with pytest.raises(RuntimeError, match="running_mean and running_var must be defined"):
        tensor.native_batch_norm(ours["x"], None, None, None, None, False, 0.1, 1e-5)
    with pytest.raises(RuntimeError, match="Given normalized_shape=\\[5, 5\\]"):
        tensor.native_layer_norm(ours["x"], [5, 5], None, None, 1e-5)
    with pytest.raises(RuntimeError, match="divisible by group=4"):
        tensor.native_group_norm(ours["x"], None, None, 4, 6, 5, 4, 1e-5)


def _fresh_running(device) -> list:
    return [tensor.zeros(3, dtype=tensor.float64, device=device), tensor.ones(3, dtype=tensor.float64, device=device)]


def test_synchronized_batch_norm_kernels_compose_to_batch_norm(torch, device):
    """Two "processes" holding halves of a batch: their gathered statistics are the whole
    batch's, and the reduced backward gives torch's batch-norm gradients of the whole batch."""
    rng = np.random.default_rng(1)
    x, w, b, dy = (rng.standard_normal(s) for s in ((6, 3, 4), (3,), (3,), (6, 3, 4)))
    eps, momentum = 1e-5, 0.1
    ref_x, ref_w, ref_b = (torch.tensor(v, requires_grad=True) for v in (x, w, b))
    ref_mean, ref_var = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    torch.nn.functional.batch_norm(ref_x, ref_mean, ref_var, ref_w, ref_b, True, momentum, eps).backward(
        torch.tensor(dy)
    )
    halves = [tensor.tensor(x[:2], device=device), tensor.tensor(x[2:], device=device)]
    stats = [tensor.batch_norm_stats(h, eps) for h in halves]
    means, invstds = tensor.stack([s[0] for s in stats]), tensor.stack([s[1] for s in stats])
    running = _fresh_running(device)
    counts = tensor.tensor([8.0, 16.0], dtype=tensor.float64, device=device)
    gather = tensor.batch_norm_gather_stats_with_counts
    mean, invstd = gather(halves[0], means, invstds, *running, momentum, eps, counts)
    _close(running, (ref_mean, ref_var))
    batch_var, batch_mean = torch.var_mean(torch.tensor(x), (0, 2), correction=0)
    _close((mean, invstd), (batch_mean, (batch_var + eps).rsqrt()))
    equal = tensor.batch_norm_gather_stats(halves[0], tensor.stack([means[0]] * 2), tensor.stack([invstds[0]] * 2),
                                           None, None, momentum, eps, 8)  # fmt: skip
    _close(equal, (means[0], invstds[0]))
    weight, bias = tensor.tensor(w, device=device), tensor.tensor(b, device=device)
    out = tensor.cat([tensor.batch_norm_elemt(h, weight, bias, mean, invstd, eps) for h in halves])
    _close(out, torch.nn.functional.batch_norm(torch.tensor(x), None, None, ref_w, ref_b, True, 0.0, eps))
    grads = [tensor.tensor(dy[:2], device=device), tensor.tensor(dy[2:], device=device)]
    reduce = tensor.batch_norm_backward_reduce
    sums = [reduce(g, h, mean, invstd, weight, True, True, True) for g, h in zip(grads, halves)]
    sum_dy, sum_dy_xmu, grad_weight, grad_bias = (sums[0][i] + sums[1][i] for i in range(4))  # the all_reduce
    _close((grad_weight, grad_bias), (ref_w.grad, ref_b.grad))
    grad_input = tensor.cat([
        tensor.batch_norm_backward_elemt(g, h, mean, invstd, weight, sum_dy, sum_dy_xmu, counts.to(tensor.int32))
        for g, h in zip(grads, halves)
    ])  # fmt: skip
    _close(grad_input, ref_x.grad)
    assert tensor.batch_norm_backward_reduce(grads[0], halves[0], mean, invstd, None, False, False, True)[:3] == (
        None, None, None)  # fmt: skip
    running = _fresh_running(device)
    ref_running = [torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)]
    _close(tensor.batch_norm_update_stats(halves[0], *running, momentum),
           torch.batch_norm_update_stats(torch.tensor(x[:2]), *ref_running, momentum))  # fmt: skip
    _close(running, ref_running)


def test_convolution_grid_sampler_affine_grid_match_torch(torch):
    rng = np.random.default_rng(2)
    for nd in (1, 2, 3):
        x = rng.standard_normal((2, 4) + (5,) * nd)
        w = rng.standard_normal((6, 2) + (3,) * nd)
        bias = rng.standard_normal(6)
        args = ([2] * nd, [1] * nd, [1] * nd)
        ours = tensor.convolution(tensor.tensor(x), tensor.tensor(w), tensor.tensor(bias), *args, False, [0] * nd, 2)
        _close(ours, torch.convolution(torch.tensor(x), torch.tensor(w), torch.tensor(bias), *args, False, [0] * nd, 2))
        wt = rng.standard_normal((4, 3) + (2,) * nd)
        _close(tensor.convolution(tensor.tensor(x), tensor.tensor(wt), None, *args, True, [1] * nd, 1),
               torch.convolution(torch.tensor(x), torch.tensor(wt), None, *args, True, [1] * nd, 1))  # fmt: skip
    for nd, sampler in ((2, "grid_sampler_2d"), (3, "grid_sampler_3d")):
        image = rng.standard_normal((2, 3) + (4,) * nd)
        theta = rng.standard_normal((2, nd, nd + 1)) * 0.5
        size = [2, 3] + [3] * nd
        grid = tensor.affine_grid_generator(tensor.tensor(theta), size, False)
        ref_grid = torch.affine_grid_generator(torch.tensor(theta), size, False)
        _close(grid, ref_grid)
        for interpolation, padding in ((0, 0), (1, 1), (0, 2)):
            _close(getattr(tensor, sampler)(tensor.tensor(image), grid, interpolation, padding, True),
                   getattr(torch, sampler)(torch.tensor(image), ref_grid, interpolation, padding, True))  # fmt: skip
    image, grid = rng.standard_normal((1, 2, 5, 5)), rng.uniform(-1, 1, (1, 3, 3, 2))
    _close(tensor.grid_sampler(tensor.tensor(image), tensor.tensor(grid), 2, 0, False),
           torch.grid_sampler(torch.tensor(image), torch.tensor(grid), 2, 0, False))  # fmt: skip
    with pytest.raises(RuntimeError, match="interpolation_mode must be one of 0 \\(bilinear\\)"):
        tensor.grid_sampler(tensor.tensor(image), tensor.tensor(grid), 3, 0, False)
    with pytest.raises(RuntimeError, match="expected 5D input"):
        tensor.grid_sampler_3d(tensor.tensor(image), tensor.tensor(grid), 0, 0, False)
    with pytest.raises(RuntimeError, match="weight of 3, 4 or 5 dims"):
        tensor.convolution(tensor.tensor(image), tensor.ones(3, 3), None, [1], [0], [1], False, [0], 1)


def test_native_and_feature_dropout(device):
    x = tensor.rand(64, 8, 5, device=device) + 0.5
    out, mask = tensor.native_dropout(x, 0.25, True)
    assert mask.dtype is tensor.bool and mask.shape == x.shape
    assert 0.65 < mask.float().mean().item() < 0.85
    np.testing.assert_allclose(out.cpu().numpy(), (x * mask.float() / 0.75).cpu().numpy(), rtol=1e-6)
    same, ones = tensor.native_dropout(x, 0.25, False)
    assert same is not x and tensor.equal(same, x) and bool(ones.all())
    assert not bool(tensor.native_dropout(x, 1.0, None)[1].any())
    dropped = tensor.feature_dropout(x, 0.5, True)
    per_channel = dropped == 0  # a whole (sample, channel) row is dropped or none of it
    assert tensor.equal(per_channel.all(-1), per_channel.any(-1)) and 0.3 < per_channel.float().mean().item() < 0.7
    assert tensor.feature_dropout(x, 0.5, False) is x
    y = x.clone()
    assert tensor.feature_dropout_(y, 0.5, True) is y and bool((y == 0).any())
    with pytest.raises(RuntimeError, match="between 0 and 1, but got 1.5"):
        tensor.feature_dropout(x, 1.5, True)
    with pytest.raises(RuntimeError, match="p to be in \\[0, 1\\]"):
        tensor.native_dropout(x, -0.5, True)


def test_embedding_bag_four_results_and_renorm_match_torch(torch, device):
    rng = np.random.default_rng(3)
    weight = rng.standard_normal((10, 3))
    indices, offsets, last = np.array([1, 2, 4, 5, 4, 3, 2, 9]), np.array([0, 4, 4]), np.array([0, 4, 4, 8])
    ours_w, ours_i, ours_off, ours_last = (tensor.tensor(v, device=device) for v in (weight, indices, offsets, last))
    ref_w, ref_i, ref_off, ref_last = (torch.tensor(v) for v in (weight, indices, offsets, last))
    for mode in (0, 1, 2):
        for padding_idx in (None, 2, -1):
            args = (False, mode, False, None, False, padding_idx)
            _close(
                tensor.embedding_bag(ours_w, ours_i, ours_off, *args), torch.embedding_bag(ref_w, ref_i, ref_off, *args)
            )
    args = (False, 2, False, None, True)  # include_last_offset
    _close(tensor.embedding_bag(ours_w, ours_i, ours_last, *args), torch.embedding_bag(ref_w, ref_i, ref_last, *args))
    per_sample = rng.uniform(size=8)
    w = ours_w.clone().requires_grad_()
    out = tensor.embedding_bag(w, ours_i, ours_off, False, 0, False, tensor.tensor(per_sample, device=device))[0]
    ref_w.requires_grad_()
    ref = torch.embedding_bag(ref_w, ref_i, ref_off, False, 0, False, torch.tensor(per_sample))[0]
    _close(out, ref)
    out.sum().backward()
    ref.sum().backward()
    _close(w.grad, ref_w.grad)
    with pytest.raises(ValueError, match="mode must be 0 \\(sum\\), 1 \\(mean\\) or 2 \\(max\\)"):
        tensor.embedding_bag(w, ours_i, ours_off, False, 3)
    ours, ref = ours_w * 3, torch.tensor(weight * 3)
    assert tensor.embedding_renorm_(ours, tensor.tensor([1, 4, 4], device=device), 1.0, 2.0) is ours
    torch.embedding_renorm_(ref, torch.tensor([1, 4, 4]), 1.0, 2.0)
    _close(ours, ref, atol=1e-6)
