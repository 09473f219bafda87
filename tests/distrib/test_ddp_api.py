"""DistributedDataParallel in one process (a world of 1): bucket layout, argument errors,
hooks and their timing, gradient views, no_sync, unused parameters, Join.

The multi-rank behaviour (equivalence, averaging, buffers, uneven inputs) is in test_ddp.py.
"""

from __future__ import annotations

import pytest

import distrib as dist
import nn
import nn.functional as F
import tensor
from distrib.algorithms import Join, Joinable
from distrib.algorithms.ddp_comm_hooks import default_hooks
from distrib.parallel.reducer import DEFAULT_FIRST_BUCKET_BYTES, assign_buckets
from tests.helpers import assert_close


@pytest.fixture
def world1():
    dist.init_process_group("zmq", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def _params(*specs):
    return [tensor.zeros(n, dtype=dtype) for n, dtype in specs]


F32, F64 = tensor.float32, tensor.float64

# (param numel/dtype in registration order, caps in bytes, expected buckets of indices)
BUCKET_CASES = [
    ([(10, F32)] * 3, [40, 1000], [[2], [1, 0]]),                       # small first bucket, then the cap
    ([(100, F32)] * 5, [1000, 2000], [[4, 3, 2], [1, 0]]),              # a bucket closes once it reaches its cap
    ([(100, F32)] * 6, [400, 800], [[5], [4, 3], [2, 1], [0]]),
    ([(30, F32), (10_000, F32), (30, F32)], [100, 100], [[2], [1], [0]]),  # a big parameter alone
    ([(10, F32), (10_000, F32), (10, F32)], [100, 100], [[2, 1], [0]]),  # closed after the one that fills it
    ([(10, F32), (10, F64), (10, F32), (10, F64)], [1 << 20, 1 << 20], [[3, 1], [2, 0]]),  # dtypes apart
    ([(5, F32)], [1 << 20, 1 << 20], [[0]]),
]


@pytest.mark.parametrize(("specs", "caps", "expected"), BUCKET_CASES)
def test_buckets_hold_parameters_in_reverse_order(specs, caps, expected):
    assert assign_buckets(_params(*specs), caps) == expected


def test_mlp_gets_a_small_first_bucket_then_bucket_cap_mb(world1):
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    ddp = dist.DistributedDataParallel(model)
    assert [b.indices for b in ddp.reducer.buckets] == [[5, 4, 3, 2], [1, 0]]
    first = ddp.reducer.buckets[0].buffer
    assert first.numel() * first.element_size() >= DEFAULT_FIRST_BUCKET_BYTES
    small = dist.DistributedDataParallel(model, bucket_cap_mb=0.01)  # first bucket at most bucket_cap_mb
    assert [b.indices for b in small.reducer.buckets] == [[5, 4], [3, 2], [1, 0]]


class NoParams(nn.Module):
    def forward(self, x):
        return x


ERROR_CASES = [
    (lambda: dist.DistributedDataParallel(lambda x: x), TypeError, "module must be an nn.Module, got function"),
    (lambda: dist.DistributedDataParallel(NoParams()), RuntimeError,
     "DistributedDataParallel is not needed when a module doesn't have any parameter that requires a gradient"),
    (lambda: dist.DistributedDataParallel(nn.Linear(2, 2).requires_grad_(False)), RuntimeError,
     "doesn't have any parameter that requires a gradient"),
    (lambda: dist.DistributedDataParallel(nn.Linear(2, 2), device_ids=[0]), ValueError,
     r"device_ids and output_device arguments only work with single-device GPU modules, but got device_ids \[0\]"),
    (lambda: dist.DistributedDataParallel(nn.Linear(2, 2), output_device=0), ValueError, "output_device 0"),
    (lambda: dist.DistributedDataParallel(nn.Linear(2, 2), bucket_cap_mb=0), ValueError,
     "bucket_cap_mb must be > 0, got 0"),
]


@pytest.mark.parametrize(("make", "error", "message"), ERROR_CASES)
def test_bad_arguments_are_refused(world1, make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_without_a_process_group_it_names_the_fix():
    with pytest.raises(dist.DistError, match="default process group is not initialized; call "
                                             "distrib.init_process_group first"):
        dist.DistributedDataParallel(nn.Linear(2, 2))


def test_wraps_the_module_like_pytorch(world1):
    module = nn.Linear(3, 2)
    ddp = dist.DistributedDataParallel(module)
    assert ddp.module is module
    assert [id(p) for p in ddp.parameters()] == [id(p) for p in module.parameters()]
    assert list(ddp.state_dict()) == ["module.weight", "module.bias"]
    x = tensor.randn(4, 3)
    assert_close(ddp(x), module(x))


def test_gradients_match_the_plain_module_and_are_written_before_backward_returns(world1, device):
    tensor.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 2)).to(device=device, dtype=F64)
    ddp = dist.DistributedDataParallel(model, bucket_cap_mb=0.0001)
    assert all(b.buffer.device == model[0].weight.device for b in ddp.reducer.buckets), "buckets on the device"
    x, y = tensor.randn(5, 4, dtype=F64, device=device), tensor.tensor([0, 1, 1, 0, 1], device=device)
    F.cross_entropy(ddp(x), y).backward()
    got = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    F.cross_entropy(model(x), y).backward()  # no DDP forward: the hooks stay out of the way
    for g, p in zip(got, model.parameters()):
        assert_close(g, p.grad)


def test_buckets_are_launched_during_backward(world1):
    """Overlap: bucket 0 (the last layer) is all-reduced before the first layer's gradient exists."""
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 6), nn.Tanh(), nn.Linear(6, 2))
    ddp = dist.DistributedDataParallel(model, bucket_cap_mb=0.0001)
    launched = []
    ddp.register_comm_hook(launched, lambda state, bucket: (state.append(bucket.index()),
                                                            default_hooks.allreduce_hook(None, bucket))[1])
    seen_at_first_layer = []
    model[0].weight.register_post_accumulate_grad_hook(lambda p: seen_at_first_layer.append(list(launched)))
    ddp(tensor.randn(3, 4)).sum().backward()
    assert [b.indices for b in ddp.reducer.buckets] == [[5, 4, 3, 2], [1, 0]]
    assert seen_at_first_layer == [[0]]  # bucket 0 was in flight while backward went on
    assert launched == [0, 1]


def test_gradient_as_bucket_view_makes_grads_views_that_survive_zero_grad(world1):
    model = nn.Linear(3, 2)
    ddp = dist.DistributedDataParallel(model, gradient_as_bucket_view=True)
    opt = nn.optim.SGD(ddp.parameters(), lr=0.1)
    buffer = ddp.reducer.buckets[0].buffer
    for set_to_none in (False, True, False):
        opt.zero_grad(set_to_none=set_to_none)
        ddp(tensor.ones(1, 3)).sum().backward()
        for p, view in zip(model.parameters(), reversed(ddp.reducer.buckets[0].views)):
            assert p.grad.data_ptr() == view.data_ptr(), "param.grad is not a view into the bucket"
        opt.step()
    assert_close(buffer, tensor.tensor([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]))  # bias (2) then weight (6)


def test_no_sync_accumulates_and_the_next_backward_syncs_the_sum(world1):
    model = nn.Linear(2, 1)
    ddp = dist.DistributedDataParallel(model)
    with ddp.no_sync():
        ddp(tensor.ones(1, 2)).sum().backward()
        ddp(tensor.ones(1, 2)).sum().backward()
    assert_close(model.bias.grad, tensor.tensor([2.0]))
    ddp(tensor.ones(1, 2)).sum().backward()
    assert_close(model.bias.grad, tensor.tensor([3.0]))
    assert ddp.require_backward_grad_sync


class Partial(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.used, self.unused = nn.Linear(2, 2), nn.Linear(2, 2)

    def forward(self, x):
        return self.used(x)


def test_unused_parameter_error_names_it_and_find_unused_parameters_fixes_it(world1):
    ddp = dist.DistributedDataParallel(Partial())
    with pytest.raises(RuntimeError, match=r"did not receive grad for rank 0: unused.weight, unused.bias "
                                           r"\(indices 2 3\)\. help: pass find_unused_parameters=True"):
        ddp(tensor.ones(1, 2)).sum().backward()
    ddp(tensor.ones(1, 2))  # the failed iteration left no state behind

    model = Partial()
    ddp = dist.DistributedDataParallel(model, find_unused_parameters=True)
    for _ in range(2):
        ddp(tensor.ones(1, 2)).sum().backward()
    assert_close(model.used.bias.grad, tensor.tensor([2.0, 2.0]))
    assert model.unused.weight.grad is None and model.unused.bias.grad is None


def test_static_graph_finds_the_unused_parameters_once(world1):
    model = Partial()
    ddp = dist.DistributedDataParallel(model, static_graph=True)
    for _ in range(3):
        ddp(tensor.ones(1, 2)).sum().backward()
    assert ddp.reducer.static_unused == [2, 3]
    assert_close(model.used.bias.grad, tensor.tensor([3.0, 3.0]))
    assert model.unused.weight.grad is None


def test_a_second_backward_after_one_forward_stays_local(world1):
    model = nn.Linear(2, 1)
    ddp = dist.DistributedDataParallel(model)
    out = ddp(tensor.ones(1, 2)).sum()
    out.backward(retain_graph=True)
    out.backward()  # after the first finished, hooks no longer reduce: a plain local backward
    assert_close(model.bias.grad, tensor.tensor([2.0]))


def test_backward_with_inputs_still_reduces(world1):
    model = nn.Linear(2, 1)
    ddp = dist.DistributedDataParallel(model)
    ddp(tensor.ones(1, 2)).sum().backward(inputs=list(model.parameters()))
    assert_close(model.bias.grad, tensor.tensor([1.0]))
    assert not ddp.reducer.require_finalize


def test_register_comm_hook_checks(world1):
    ddp = dist.DistributedDataParallel(nn.Linear(2, 1))
    with pytest.raises(TypeError, match="hook must be callable, got int"):
        ddp.register_comm_hook(None, 3)
    ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    with pytest.raises(RuntimeError, match="can only be called once"):
        ddp.register_comm_hook(None, default_hooks.allreduce_hook)
    late = dist.DistributedDataParallel(nn.Linear(2, 1))
    late(tensor.ones(1, 2)).sum().backward()
    with pytest.raises(RuntimeError, match="must be called before the first backward pass"):
        late.register_comm_hook(None, default_hooks.allreduce_hook)


def test_fp16_hook_keeps_the_gradient_dtype(world1):
    model = nn.Linear(2, 1)
    ddp = dist.DistributedDataParallel(model)
    ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    ddp(tensor.full((1, 2), 1.0 / 3.0)).sum().backward()
    assert model.weight.grad.dtype == F32
    assert_close(model.weight.grad, tensor.full((1, 2), 1.0 / 3.0, dtype=tensor.float16).float())


def test_join_on_one_rank_is_a_passthrough(world1):
    model = nn.Linear(2, 1)
    ddp = dist.DistributedDataParallel(model)
    with ddp.join():
        assert ddp._join_config.enable
        ddp(tensor.ones(1, 2)).sum().backward()
    assert not ddp._join_config.enable
    assert_close(model.bias.grad, tensor.tensor([1.0]))


def test_join_argument_errors(world1):
    with pytest.raises(ValueError, match="requires at least one joinable"):
        Join([])
    with pytest.raises(TypeError, match="every joinable must be a Joinable, got Linear"):
        Join([nn.Linear(2, 2)])
    assert isinstance(dist.DistributedDataParallel(nn.Linear(2, 1)), Joinable)
