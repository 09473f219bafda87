"""The layers and functions added for issue 16 on every device: a forward and backward on the
device agree with the same computation on the CPU (the torch comparisons run on the CPU)."""

from __future__ import annotations

import numpy as np
import pytest

import nn
import nn.functional as F
import tensor
from tests.helpers import assert_close

RNG = np.random.default_rng(0)
X4 = RNG.standard_normal((2, 4, 5, 6)).astype("float32")
X3 = RNG.standard_normal((2, 4, 7)).astype("float32")

CASES = [
    ("pad-reflect", lambda x: F.pad(x, (1, 2, 2, 1), mode="reflect"), X4),
    ("pad-constant", lambda x: F.pad(x, (1, -1), value=0.5), X3),
    ("bicubic", lambda x: F.interpolate(x, scale_factor=1.5, mode="bicubic"), X4),
    ("linear", lambda x: F.interpolate(x, size=11, mode="linear", align_corners=True), X3),
    ("pixel_shuffle", lambda x: F.pixel_shuffle(x, 2), X4),
    ("instance_norm", nn.InstanceNorm2d(4, affine=True), X4),
    ("rms_norm", nn.RMSNorm(6), X4),
    ("local_response_norm", nn.LocalResponseNorm(3), X4),
    ("adaptive_max", nn.AdaptiveMaxPool2d((2, 3)), X4),
    ("lp_pool", lambda x: F.lp_pool2d(x.abs() + 0.1, 2.0, 2), X4),
    ("hardswish", nn.Hardswish(), X3),
    ("glu", nn.GLU(1), X3),
    ("celu", nn.CELU(0.5), X3),
    ("triplet", lambda x: F.triplet_margin_loss(x[0], x[1], x[0].flip(0)), X3),
    ("multi_margin", lambda x: F.multi_margin_loss(x[0].mT, tensor.tensor([0, 1, 2, 3, 0, 1, 2], device=x.device)), X3),
    (
        "grid_sample",
        lambda x: F.grid_sample(
            x, F.affine_grid(tensor.tensor([[[0.9, 0.1, 0.0], [0.0, 1.1, 0.1]]] * 2, device=x.device), (2, 4, 3, 3))
        ),
        X4,
    ),
    (
        "ctc",
        lambda x: F.ctc_loss(
            F.log_softmax(x.permute(2, 0, 1), -1), tensor.tensor([[1, 2], [3, 3]], device=x.device), [7, 6], [2, 2]
        ),
        X3,
    ),
]


@pytest.mark.parametrize("name, fn, x", CASES, ids=[c[0] for c in CASES])
def test_device_matches_cpu(name, fn, x, device):
    if isinstance(fn, nn.Module):
        fn = fn.to(device)
    ours = tensor.tensor(x, device=device, requires_grad=True)
    out = fn(ours)
    out.sum().backward()
    if isinstance(fn, nn.Module):
        fn = fn.to("cpu")
    ref_in = tensor.tensor(x, requires_grad=True)
    ref = fn(ref_in)
    ref.sum().backward()
    assert out.device.type == device
    assert_close(out.cpu(), ref.detach().numpy(), rtol=1e-4, atol=1e-5)
    assert_close(ours.grad.cpu(), ref_in.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_optimizers_step_on_the_device(device):
    for name in ("Adamax", "NAdam", "RAdam", "Adadelta", "ASGD", "Rprop", "Adafactor"):
        p = nn.Parameter(tensor.tensor(X3[0], device=device))
        p.grad = tensor.ones_like(p)
        getattr(nn.optim, name)([p], lr=0.01).step()
        assert p.device.type == device and not np.allclose(p.detach().cpu().numpy(), X3[0])
