"""A GPU training step does not wait for the device (issue 13, part 3): index and target checks
are device-side asserts (Note [Device-side asserts] in tensor/_device_asserts.py), reported at
the next synchronisation. Counted by the CuPy stand-in; skipped on a real GPU, whose CuPy
counts nothing."""

from __future__ import annotations

import pytest

import nn
import tensor
from nn import functional as F
from tests.conftest import CUDA_SKIP_REASON

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(CUDA_SKIP_REASON is not None, reason=f"no CUDA device: {CUDA_SKIP_REASON}")]


@pytest.fixture
def syncs():
    state = pytest.importorskip("cupy._state", reason="counting needs the CuPy stand-in")
    if not hasattr(state, "synchronizations"):
        pytest.skip("counting needs the CuPy stand-in (a real CuPy counts nothing)")
    return state.synchronizations


def _cnn_step(optimizer_class, **options):
    tensor.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(4 * 4 * 4, 5)).cuda()
    opt = optimizer_class(model.parameters(), lr=0.01, **options)
    x, y = tensor.randn(2, 3, 8, 8, device="cuda"), tensor.tensor([1, 4], device="cuda")

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


@pytest.mark.parametrize("optimizer_class, options", [
    (nn.optim.SGD, {"momentum": 0.9}), (nn.optim.Adam, {}), (nn.optim.AdamW, {"weight_decay": 0.1}),
])
def test_a_cnn_training_step_makes_no_synchronisation(syncs, optimizer_class, options):
    step = _cnn_step(optimizer_class, **options)
    step()  # the first step allocates optimizer state
    before = syncs()
    for _ in range(2):
        loss = step()
    assert syncs() == before
    assert loss.item() > 0  # reading the loss is the one synchronisation, with the checks
    assert syncs() == before + 2


@pytest.mark.parametrize("call, error, message", [
    (lambda: F.cross_entropy(tensor.randn(3, 4, device="cuda"), tensor.tensor([0, 4, 1], device="cuda")),
     IndexError, r"nll_loss: a target is outside \[0, 4\)"),
    (lambda: F.embedding(tensor.tensor([0, 3], device="cuda"), tensor.ones(3, 2, device="cuda")),
     IndexError, "embedding: index out of range in self"),
    (lambda: tensor.zeros(3, 4, device="cuda").gather(1, tensor.tensor([[4]], device="cuda")),
     RuntimeError, r"gather\(\): an index is out of bounds for dimension 1 with size 4"),
    (lambda: tensor.zeros(3, device="cuda").index_select(0, tensor.tensor([-4], device="cuda")),
     IndexError, r"index_select\(\): an index is out of bounds for dimension 0 with size 3"),
    (lambda: tensor.zeros(3, device="cuda").scatter_add(0, tensor.tensor([3], device="cuda"),
                                                        tensor.ones(1, device="cuda")),
     RuntimeError, r"scatter_add\(\): an index is out of bounds for dimension 0 with size 3"),
    (lambda: tensor.zeros(3, device="cuda")[tensor.tensor([5], device="cuda")],
     IndexError, "indexing: an index is out of bounds for dimension 0 with size 3"),
])
def test_a_failed_check_is_reported_at_the_next_synchronisation(syncs, call, error, message):
    """Reported with the failed check's own error type (torch's on the CPU: RuntimeError for
    gather and the scatters, IndexError for index_select and indexing)."""
    before = syncs()
    out = call()
    assert syncs() == before
    with pytest.raises(error, match=f"device-side assert triggered on cuda:0: {message}"):
        out.sum().item()
    assert tensor.ones(1, device="cuda").item() == 1.0  # reported once


def test_max_pooling_keeps_nan_without_a_synchronisation(syncs):
    x = tensor.tensor([[[[1.0, float("nan")], [3.0, 2.0]]]], device="cuda", requires_grad=True)
    before = syncs()
    out = F.max_pool2d(x, 2)
    out.backward(tensor.full_like(out, float("inf")))
    assert syncs() == before
    assert str(out.tolist()) == "[[[[nan]]]]"
    assert x.grad.tolist() == [[[[0.0, float("inf")], [0.0, 0.0]]]]
