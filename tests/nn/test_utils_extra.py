"""nn.utils additions against torch: conv/linear + BatchNorm fusion, clip_grads_with_norm_,
the deprecated clip_grad_norm, skip_init and the memory-format converters."""

from __future__ import annotations

import numpy as np
import pytest

import nn
import tensor
from tests.helpers import assert_close
from tests.nn.oracle import copy_state

RNG = np.random.default_rng(0)


def _trained_bn(lib_bn, bn, torch):
    with torch.no_grad():
        lib_bn.running_mean.copy_(torch.tensor(RNG.standard_normal(bn.num_features).astype("float32")))
        lib_bn.running_var.copy_(torch.tensor(RNG.uniform(0.5, 2, bn.num_features).astype("float32")))
        lib_bn.weight.copy_(torch.tensor(RNG.standard_normal(bn.num_features).astype("float32")))
    bn.load_state_dict({k: tensor.tensor(v.numpy()) for k, v in lib_bn.state_dict().items()})


@pytest.mark.parametrize("kind", ["conv", "conv_transpose", "linear"])
def test_fusion_matches_torch_and_the_unfused_pair(kind, torch):
    if kind == "linear":
        layer, t_layer = nn.Linear(4, 3), torch.nn.Linear(4, 3)
        bn, t_bn = nn.BatchNorm1d(3), torch.nn.BatchNorm1d(3)
        x = RNG.standard_normal((5, 4)).astype("float32")
    elif kind == "conv":
        layer, t_layer = nn.Conv2d(2, 3, 3), torch.nn.Conv2d(2, 3, 3)
        bn, t_bn = nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3)
        x = RNG.standard_normal((2, 2, 5, 5)).astype("float32")
    else:
        layer, t_layer = nn.ConvTranspose2d(2, 3, 3), torch.nn.ConvTranspose2d(2, 3, 3)
        bn, t_bn = nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3)
        x = RNG.standard_normal((2, 2, 4, 4)).astype("float32")
    copy_state(layer, t_layer, torch)
    _trained_bn(t_bn, bn, torch)
    for m in (layer, t_layer, bn, t_bn):
        m.eval()
    if kind == "linear":
        fused, t_fused = nn.utils.fuse_linear_bn_eval(layer, bn), torch.nn.utils.fuse_linear_bn_eval(t_layer, t_bn)
    else:
        transpose = kind == "conv_transpose"
        fused = nn.utils.fuse_conv_bn_eval(layer, bn, transpose)
        t_fused = torch.nn.utils.fuse_conv_bn_eval(t_layer, t_bn, transpose)
    out = fused(tensor.tensor(x))
    assert_close(out, t_fused(torch.tensor(x)).detach().numpy(), rtol=1e-4, atol=1e-5)
    assert_close(out, bn(layer(tensor.tensor(x))).detach().numpy(), rtol=1e-4, atol=1e-5)
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        nn.utils.fuse_linear_bn_eval(nn.Linear(2, 2), nn.BatchNorm1d(2))


def test_clip_grads_with_norm_matches_torch(torch):
    grads = [RNG.standard_normal(s).astype("float32") for s in ((3, 2), (4,))]
    ours = [nn.Parameter(tensor.zeros(*g.shape)) for g in grads]
    theirs = [torch.nn.Parameter(torch.zeros(*g.shape)) for g in grads]
    for p, q, g in zip(ours, theirs, grads):
        p.grad, q.grad = tensor.tensor(g), torch.tensor(g)
    total = nn.utils.get_total_norm([p.grad for p in ours])
    nn.utils.clip_grads_with_norm_(ours, 0.5, total)
    torch.nn.utils.clip_grads_with_norm_(theirs, 0.5, torch.nn.utils.get_total_norm([q.grad for q in theirs]))
    for p, q in zip(ours, theirs):
        assert_close(p.grad, q.grad.numpy(), rtol=1e-5, atol=1e-6)
    with pytest.warns(FutureWarning, match="clip_grad_norm` is now deprecated"):
        nn.utils.clip_grad_norm(ours, 1.0)


def test_skip_init_and_memory_format_converters():
    layer = nn.utils.skip_init(nn.Linear, 3, 2)
    assert isinstance(layer, nn.Linear) and layer.weight.shape == (2, 3)
    with pytest.raises(RuntimeError, match="must support a 'device' arg"):
        nn.utils.skip_init(nn.ReLU)
    conv = nn.Conv2d(1, 1, 1)
    assert nn.utils.convert_conv2d_weight_memory_format(conv, "channels_last") is conv
