"""``fused=True`` for SGD, Adam and AdamW (issue 13, part 3): the same steps as the unfused
path, one elementwise kernel per device and dtype (Note [Fused optimizer steps])."""

from __future__ import annotations

import numpy as np
import pytest

import nn
import tensor
from tests.conftest import CUDA_SKIP_REASON
from tests.helpers import assert_close

CASES = [
    (nn.optim.Adam, {}), (nn.optim.Adam, {"amsgrad": True, "weight_decay": 0.1}),
    (nn.optim.Adam, {"maximize": True}), (nn.optim.AdamW, {}),
    (nn.optim.SGD, {}), (nn.optim.SGD, {"momentum": 0.9}),
    (nn.optim.SGD, {"momentum": 0.9, "nesterov": True, "weight_decay": 0.1}),
    (nn.optim.SGD, {"momentum": 0.5, "dampening": 0.3, "maximize": True}),
]


def _train(device, optimizer_class, options, fused, steps=3, dtypes=(tensor.float32,)):
    tensor.manual_seed(0)
    layers = [nn.Linear(4, 4).to(device=device, dtype=dtypes[i % len(dtypes)]) for i in range(5)]
    opt = optimizer_class([p for layer in layers for p in layer.parameters()], lr=0.01, fused=fused,
                          **options)
    x = tensor.randn(3, 4, device=device)
    for _ in range(steps):
        opt.zero_grad()
        sum((layer(x.to(layer.weight.dtype)) ** 2).sum().to(tensor.float32) for layer in layers).backward()
        opt.step()
    return layers, opt


@pytest.mark.parametrize("optimizer_class, options", CASES)
def test_fused_steps_match_the_unfused_ones(device, optimizer_class, options):
    plain, plain_opt = _train(device, optimizer_class, options, fused=False)
    fused, fused_opt = _train(device, optimizer_class, options, fused=True)
    for a, b in zip(plain, fused):
        assert_close(b.weight, a.weight.detach().cpu().numpy(), rtol=1e-6, atol=1e-7)
        assert_close(b.bias, a.bias.detach().cpu().numpy(), rtol=1e-6, atol=1e-7)
    plain_state, fused_state = plain_opt.state_dict()["state"], fused_opt.state_dict()["state"]
    assert {k: sorted(v) for k, v in plain_state.items()} == {k: sorted(v) for k, v in fused_state.items()}


def test_a_reloaded_state_is_adopted(device):
    layers, opt = _train(device, nn.optim.Adam, {}, fused=True, steps=2)
    saved = opt.state_dict()
    again = nn.optim.Adam([p for layer in layers for p in layer.parameters()], lr=0.01, fused=True)
    again.load_state_dict(saved)
    twin = nn.optim.Adam([p.detach().clone().requires_grad_() for layer in layers for p in layer.parameters()],
                         lr=0.01)
    twin.load_state_dict(saved)
    for opt_, params in ((again, again.param_groups[0]["params"]), (twin, twin.param_groups[0]["params"])):
        for p in params:
            p.grad = tensor.ones_like(p)
        opt_.step()
    for p, q in zip(again.param_groups[0]["params"], twin.param_groups[0]["params"]):
        assert_close(p, q.detach().cpu().numpy(), rtol=1e-6, atol=1e-7)
        assert float(again.state[p]["step"]) == 3.0


def test_a_module_sees_its_fused_updates(device):
    model = nn.Linear(3, 2).to(device)
    opt = nn.optim.SGD(model.parameters(), lr=1.0, fused=True)
    model.weight.grad, model.bias.grad = tensor.ones_like(model.weight), tensor.ones_like(model.bias)
    before = model.weight.detach().cpu().numpy()
    opt.step()
    np.testing.assert_allclose(model.state_dict()["weight"].cpu().numpy(), before - 1.0, rtol=1e-6)
    assert list(model.parameters())[0] is model.weight


@pytest.mark.parametrize("call, message", [
    (lambda: nn.optim.Adam([tensor.zeros(2, requires_grad=True)], fused=True, foreach=True),
     "`fused` and `foreach` cannot be `True` together."),
    (lambda: nn.optim.SGD([tensor.zeros(2, dtype=tensor.int64)], fused=True),
     "`fused=True` requires all the params to be floating point"),
])
def test_fused_refusals(call, message):
    with pytest.raises(RuntimeError, match=message):
        call()


@pytest.mark.gpu
@pytest.mark.skipif(CUDA_SKIP_REASON is not None, reason=f"no CUDA device: {CUDA_SKIP_REASON}")
def test_a_fused_adam_step_on_ten_parameters_is_one_kernel_per_dtype():
    state = pytest.importorskip("cupy._state", reason="counting needs the CuPy stand-in")
    if not hasattr(state, "elementwise_launches"):
        pytest.skip("counting needs the CuPy stand-in (a real CuPy counts nothing)")
    layers, opt = _train("cuda", nn.optim.Adam, {}, fused=True, steps=1, dtypes=(tensor.float32, tensor.float64))
    assert sum(len(list(layer.parameters())) for layer in layers) == 10
    launches, syncs = state.elementwise_launches(), state.synchronizations()
    opt.step()
    assert state.elementwise_launches() - launches == 2  # float32 and float64
    assert state.synchronizations() == syncs
