"""Random numbers made on the GPU (issue 13, part 3; Note [Random numbers per device]): no host
data, a generator per device seeded by manual_seed, the same numbers on every GPU."""

from __future__ import annotations

import numpy as np
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


@pytest.fixture
def counting():
    """The stand-in's synchronisation counter (a real CuPy counts nothing)."""
    state = pytest.importorskip("cupy._state", reason="counting needs the CuPy stand-in")
    if not hasattr(state, "synchronizations"):
        pytest.skip("counting needs the CuPy stand-in (a real CuPy counts nothing)")
    return state


def _no_host_data(monkeypatch):
    """Make every way of copying host data to a device fail the test."""
    cupy = pytest.importorskip("cupy")

    def refuse(*args, **kwargs):
        raise AssertionError("host data copied to the device")
    monkeypatch.setattr(cupy, "asarray", refuse)
    monkeypatch.setattr(cupy, "array", refuse)
    monkeypatch.setattr(cupy.ndarray, "set", refuse)


def test_randperm_multinomial_and_init_draw_on_the_device(monkeypatch, counting):
    w = tensor.tensor([[0.0, 1.0, 3.0, 0.0], [2.0, 0.0, 0.0, 2.0]], device="cuda")
    params = [tensor.empty(16, 8, device="cuda") for _ in range(9)]
    syncs = counting.synchronizations()
    _no_host_data(monkeypatch)
    perm = tensor.randperm(50, device="cuda")
    picked = tensor.multinomial(w, 200, replacement=True)
    distinct = tensor.multinomial(w, 2)
    inits = [nn.init.uniform_(params[0], -1, 1), nn.init.normal_(params[1], 0, 2),
             nn.init.trunc_normal_(params[2], 0.5, 1.0, -0.5, 1.0),
             nn.init.xavier_uniform_(params[3]), nn.init.xavier_normal_(params[4]),
             nn.init.kaiming_uniform_(params[5], a=5 ** 0.5), nn.init.kaiming_normal_(params[6]),
             nn.init.orthogonal_(params[7]), nn.init.sparse_(params[8], 0.5)]
    assert counting.synchronizations() == syncs  # nothing waited for the device either
    monkeypatch.undo()
    assert perm.device.type == "cuda" and sorted(perm.tolist()) == list(range(50))
    rows = picked.tolist()
    assert set(rows[0]) <= {1, 2} and set(rows[1]) <= {0, 3}
    assert 100 < rows[0].count(2) < 190 and 60 < rows[1].count(0) < 140  # weights 1:3 and 1:1
    assert [sorted(r) for r in distinct.tolist()] == [[1, 2], [0, 3]]
    assert all(t.device.type == "cuda" for t in inits)
    trunc = inits[2].cpu().numpy()
    assert trunc.min() >= -0.5 and trunc.max() <= 1.0 and trunc.std() > 0.1
    q = inits[7].cpu().numpy().astype("float64")
    assert abs(q.T @ q - np.eye(8)).max() < 1e-5
    assert ((inits[8].cpu().numpy() == 0).sum(0) >= 8).all()


def test_invalid_multinomial_weights_are_a_device_side_check(counting):
    bad = tensor.tensor([[1.0, -1.0]], device="cuda")
    syncs = counting.synchronizations()
    tensor.multinomial(bad, 1)  # no synchronisation to check the weights ...
    assert counting.synchronizations() == syncs
    with pytest.raises(RuntimeError, match="invalid multinomial distribution"):
        tensor.cuda.synchronize()  # ... reported at the next one


def test_a_gpu_generator_state_round_trips_per_device():
    _needs_two_devices()
    gens = [tensor.Generator(f"cuda:{i}").manual_seed(3) for i in (0, 1)]
    tensor.rand(5, generator=gens[0], device="cuda:0")
    saved = [g.get_state() for g in gens]
    assert all(s.device.type == "cpu" and s.dtype == tensor.uint8 for s in saved)
    first = [tensor.rand(4, generator=g, device=f"cuda:{i}").tolist() for i, g in enumerate(gens)]
    assert first[0] != first[1]  # device 0 had advanced: their states differ
    for g, s in zip(gens, saved):
        g.set_state(s)
    assert [tensor.rand(4, generator=g, device=f"cuda:{i}").tolist() for i, g in enumerate(gens)] == first
    # the default generator of a device, too; and a state restores into another device's generator
    tensor.manual_seed(11)
    default = tensor._random.generator_of("cuda:1")
    state = default.get_state()
    again = tensor.rand(3, device="cuda:1").tolist()
    default.set_state(state)
    assert tensor.rand(3, device="cuda:1").tolist() == again
    gens[1].set_state(saved[0])
    assert tensor.rand(4, generator=gens[1], device="cuda:1").tolist() == first[0]


def test_a_state_of_another_kind_of_generator_is_refused():
    with pytest.raises(RuntimeError, match="set_state\\(\\): not a generator state .*state of a cpu generator"):
        tensor.Generator("cuda").set_state(tensor.Generator().get_state())
