"""Tensors in OS shared memory, within one process: ``share_memory_``, ``is_shared``, ``empty_shared``,
the sharing strategies, and the clear errors for too little shared memory (no SIGBUS).

Crossing process boundaries is tested in tests/distrib/test_multiprocessing*.py.
"""

from __future__ import annotations

import errno
import gc
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import nn
import tensor
from tensor import _shared
from tests.helpers import assert_close

STRATEGIES = ["file_descriptor", "file_system"]


@pytest.fixture(params=STRATEGIES)
def strategy(request, monkeypatch, tmp_path):
    """Each sharing strategy; named segments go to a private directory, checked empty at the end."""
    monkeypatch.setattr(_shared, "SHM_DIR", str(tmp_path))
    previous = _shared.get_sharing_strategy()
    _shared.set_sharing_strategy(request.param)
    yield request.param
    _shared.set_sharing_strategy(previous)
    gc.collect()
    assert os.listdir(tmp_path) == []


def test_share_memory_moves_the_storage_once_and_keeps_the_values(strategy):
    t = tensor.arange(6.0).reshape(2, 3)
    expected = t.numpy().copy()
    assert not t.is_shared()
    assert t.share_memory_() is t
    assert t.is_shared()
    assert _shared.segment_of(t._data).strategy == strategy
    assert_close(t, tensor.from_numpy(expected))
    pointer = t.data_ptr()
    t.share_memory_()  # already shared: a no-op
    assert t.data_ptr() == pointer


@pytest.mark.parametrize("make_view, expected", [
    (lambda base: base[1:, ::2], [[4.0, 6.0], [8.0, 10.0]]),
    (lambda base: base.t(), [[0, 4, 8], [1, 5, 9], [2, 6, 10], [3, 7, 11]]),
    (lambda base: base[2], [8.0, 9.0, 10.0, 11.0]),
    (lambda base: base[0, 0], 0.0),
])
def test_a_view_keeps_offset_and_strides_and_stays_aliased_with_its_base(strategy, make_view, expected):
    base = tensor.arange(12.0).reshape(3, 4)
    view = make_view(base)
    strides, offset = view.stride(), view.data_ptr() - view._base.data_ptr()
    view.share_memory_()
    assert view.is_shared() and view._base.is_shared()
    assert (view.stride(), view.data_ptr() - view._base.data_ptr()) == (strides, offset)
    assert_close(view, tensor.tensor(expected, dtype=tensor.float32))
    view._base.fill_(-1.0)  # one storage: a write through the base shows in the view
    assert (view == -1.0).all()


def test_views_of_one_buffer_shared_one_after_the_other_alias_one_segment(strategy):
    base = tensor.zeros(8)
    first, second = base[:4], base[2:6]
    first.share_memory_()
    second.share_memory_()
    assert _shared.segment_of(first._data) is _shared.segment_of(second._data)
    assert second.data_ptr() - first.data_ptr() == 2 * 4
    first[3] = 5.0
    assert second[1].item() == 5.0


def test_share_memory_on_a_non_contiguous_leaf_keeps_its_strides(strategy):
    t = tensor.arange(6.0).reshape(2, 3).t().contiguous().t()  # a transposed layout it owns
    strides = t.stride()
    t.share_memory_()
    assert t.stride() == strides
    assert_close(t, tensor.arange(6.0).reshape(2, 3))


def test_share_memory_keeps_requires_grad_and_autograd_still_works(strategy):
    w = tensor.ones(3, requires_grad=True)
    w.share_memory_()
    (w * 2).sum().backward()
    assert w.requires_grad and w.is_leaf
    assert_close(w.grad, tensor.full((3,), 2.0))


@pytest.mark.parametrize("shape, dtype", [
    ((2, 3), tensor.float32), ((4,), tensor.int64), ((), tensor.float64), ((0, 5), tensor.float32),
    ((3, 1), tensor.uint8),
])
def test_empty_shared_is_zero_filled_and_shared(strategy, shape, dtype):
    t = _shared.empty_shared(shape, dtype)
    assert (t.shape, t.dtype) == (shape, dtype)
    assert t.is_shared()
    assert (t.numpy() == 0).all()


def test_empty_shared_defaults_to_the_default_dtype():
    assert _shared.empty_shared(3).dtype == tensor.get_default_dtype()


def test_module_share_memory_shares_every_parameter_and_buffer(strategy):
    model = nn.Module()
    model.weight = nn.Parameter(tensor.ones(2, 2))
    model.register_buffer("running", tensor.zeros(2))
    assert model.share_memory() is model
    assert model.weight.is_shared() and model.running.is_shared()
    assert isinstance(model.weight, nn.Parameter) and model.weight.requires_grad


def test_a_segment_is_freed_as_soon_as_its_last_tensor_is_gone(strategy, tmp_path):
    gc.disable()  # freed by reference counting, not by a later garbage collection
    try:
        t = tensor.ones(1000).share_memory_()
        ident = _shared.segment_of(t._data).ident
        assert _shared.cached_segment(ident) is not None
        if strategy == "file_system":
            assert len(os.listdir(tmp_path)) == 1
        del t
        assert _shared.cached_segment(ident) is None
        assert os.listdir(tmp_path) == []
    finally:
        gc.enable()


def test_strategy_functions():
    assert _shared.get_all_sharing_strategies() == set(STRATEGIES)
    assert _shared.get_sharing_strategy() == "file_descriptor"  # the leak-proof default
    with pytest.raises(ValueError, match=r"invalid sharing strategy 'nope'; expected one of "
                                         r"\['file_descriptor', 'file_system'\]"):
        _shared.set_sharing_strategy("nope")


def test_is_shared_and_share_memory_on_any_device(device):
    t = tensor.zeros(3, device=device)
    if device == "cuda":  # CUDA tensors are shareable as they are (by IPC handle)
        assert t.is_shared() and t.share_memory_().is_shared()
    else:
        assert not t.is_shared() and t.share_memory_().is_shared()


# ---------------------------------------------------------------- little shared memory
def test_too_little_free_space_is_a_clear_error_before_allocating(monkeypatch, tmp_path):
    monkeypatch.setattr(_shared, "SHM_DIR", str(tmp_path))
    monkeypatch.setattr(_shared, "free_bytes", lambda directory: 1000)
    _shared.set_sharing_strategy("file_system")
    try:
        with pytest.raises(RuntimeError, match=r"not enough shared memory for a 40000-byte tensor in .*, "
                                               r"1000 bytes free\. help: .*--shm-size"):
            tensor.zeros(10000).share_memory_()
    finally:
        _shared.set_sharing_strategy("file_descriptor")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("call", ["posix_fallocate", "pwrite"])
def test_enospc_while_allocating_is_a_clear_error_and_leaves_nothing(strategy, monkeypatch, tmp_path, call):
    def no_space(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, call, no_space)
    make = (lambda: _shared.empty_shared((1000,))) if call == "posix_fallocate" else (
        lambda: tensor.ones(1000).share_memory_())
    with pytest.raises(RuntimeError, match=r"not enough shared memory for a (4000|8000)-byte tensor"):
        make()
    monkeypatch.undo()
    monkeypatch.setattr(_shared, "SHM_DIR", str(tmp_path))
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("strategy_name", STRATEGIES)
def test_a_real_allocation_failure_raises_instead_of_sigbus(strategy_name, tmp_path):
    # RLIMIT_FSIZE makes the kernel refuse to allocate past 1 MB (EFBIG), as a full tmpfs would
    # (ENOSPC): the process must get an exception and exit normally, not die of SIGBUS.
    script = textwrap.dedent(f"""
        import resource, signal
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
        import tensor
        from tensor import _shared
        _shared.set_sharing_strategy({strategy_name!r})
        small = tensor.ones(1000).share_memory_()
        try:
            tensor.ones(1 << 20).share_memory_()
        except RuntimeError as exc:
            print("caught:", exc)
        small += 1  # the memory that was allocated is usable
        print("sum", int(small.sum().item()))
    """)
    env = dict(os.environ, DISTRIB_SHM_DIR=str(tmp_path))
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 0, result.stderr
    assert "caught: not enough shared memory for a 4194304-byte tensor" in result.stdout
    assert "sum 2000" in result.stdout
    assert os.listdir(tmp_path) == []


def test_share_memory_of_a_tensor_over_a_read_only_buffer_gives_a_writable_shared_copy():
    array = np.frombuffer(bytes(range(8)), dtype=np.uint8)
    t = tensor.from_numpy(array)
    t.share_memory_()
    assert t.is_shared() and t.tolist() == list(range(8))
    t[0] = 9
    assert t[0].item() == 9 and array[0] == 0
