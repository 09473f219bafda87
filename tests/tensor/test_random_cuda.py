"""Random numbers made on the GPU (issue 13, part 3; Note [Random numbers per device]): no host
data, a generator per device seeded by manual_seed, the same numbers on every GPU."""

from __future__ import annotations

import pytest

import nn
import tensor
from nn import functional as F
from tests.conftest import CUDA_SKIP_REASON

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(CUDA_SKIP_REASON is not None, reason=f"no CUDA device: {CUDA_SKIP_REASON}")]


def _needs_two_devices():
    if tensor.cuda.device_count() < 2:
        pytest.skip(f"needs 2 GPUs, found {tensor.cuda.device_count()}")


def test_samplers_and_dropout_take_no_host_data(monkeypatch):
    cupy = pytest.importorskip("cupy")
    x = tensor.ones(64, 8, device="cuda", requires_grad=True)
    drop = nn.Dropout(0.5)

    def refuse(*args, **kwargs):
        raise AssertionError("host data copied to the device")
    monkeypatch.setattr(cupy, "asarray", refuse)
    monkeypatch.setattr(cupy, "array", refuse)
    samples = [tensor.rand(3, device="cuda"), tensor.randn(3, device="cuda"),
               tensor.randint(0, 5, (3,), device="cuda"), tensor.bernoulli(x.detach() * 0.5),
               tensor.empty(3, device="cuda").uniform_(-1, 1), tensor.empty(3, device="cuda").normal_(2.0, 0.1),
               F.dropout(x, 0.5), drop(x)]
    monkeypatch.undo()
    assert all(s.device.type == "cuda" for s in samples)
    kept = (samples[-1] != 0).float().mean().item()
    assert 0.3 < kept < 0.7 and set(samples[-1].flatten().tolist()) <= {0.0, 2.0}


def test_manual_seed_seeds_every_device_alike():
    _needs_two_devices()
    tensor.manual_seed(7)
    first = [tensor.randn(5, device=f"cuda:{i}").tolist() for i in (0, 1)]
    assert first[0] == first[1]
    tensor.manual_seed(7)
    assert tensor.randn(5, device="cuda:1").tolist() == first[1]


def test_cuda_manual_seed_seeds_one_device():
    _needs_two_devices()
    tensor.manual_seed(0)
    other = tensor.rand(4, device="cuda:0").tolist()
    tensor.manual_seed(0)
    tensor.cuda.manual_seed(5, device=1)
    assert tensor.rand(4, device="cuda:0").tolist() == other
    theirs = tensor.rand(4, device="cuda:1").tolist()
    tensor.cuda.manual_seed_all(5)
    assert tensor.rand(4, device="cuda:0").tolist() == theirs


def test_a_gpu_generator_state_cannot_be_saved():
    with pytest.raises(RuntimeError, match="does not expose its Philox counter"):
        tensor.Generator("cuda").get_state()
