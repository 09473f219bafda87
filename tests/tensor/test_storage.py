"""Storages (tensor/_storage.py, Note [Storages]): ``untyped_storage``, ``storage``, ``set_`` and
``is_set_to``, compared with torch's."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tensor


def _pair(torch, values, dtype="float32"):
    array = np.asarray(values, dtype=dtype)
    return tensor.tensor(array), torch.tensor(array)


def test_the_bytes_and_sizes_are_torchs(torch):
    for dtype in ("float32", "float64", "int16", "bool"):
        ours, theirs = _pair(torch, np.arange(6).reshape(2, 3) % 3, dtype)
        a, b = ours.untyped_storage(), theirs.untyped_storage()
        assert (a.nbytes(), a.size(), len(a), a.element_size()) == (b.nbytes(), b.size(), len(b), b.element_size())
        assert a.tolist() == b.tolist() and list(a) == list(b)
        assert (a[0], a[-1], a[5]) == (b[0], b[-1], b[5])


def test_views_share_one_storage_object(torch):
    x = tensor.arange(12.0).reshape(3, 4)
    storage = x.untyped_storage()
    assert x[1:, ::2].untyped_storage() is storage and x.T.untyped_storage() is storage
    assert storage.data_ptr() == x.data_ptr() == x[1:].untyped_storage().data_ptr()
    assert x[1:].data_ptr() == storage.data_ptr() + 4 * x.element_size()
    assert tensor.arange(12.0).untyped_storage() is not storage
    t = torch.arange(12.0).reshape(3, 4)
    assert t[1:].untyped_storage().data_ptr() == t.untyped_storage().data_ptr()


def test_writes_through_a_storage_reach_its_tensors(torch):
    ours, theirs = _pair(torch, [1.0, 2.0, 3.0])
    for t in (ours, theirs):
        s = t.untyped_storage()
        s[0:4].fill_(0)
        s[4:8].copy_(t[2:].untyped_storage()[8:12].clone())
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    np.testing.assert_array_equal(ours.numpy(), [0.0, 3.0, 3.0])


def test_slices_and_index_errors(torch):
    ours, theirs = _pair(torch, [1.0, 2.0])
    for t in (ours, theirs):
        part = t.untyped_storage()[2:6]
        assert part.nbytes() == 4 and part.data_ptr() == t.data_ptr() + 2
        with pytest.raises(IndexError):
            t.untyped_storage()[8]


def test_typed_storage_warns_and_counts_elements(torch):
    ours, theirs = _pair(torch, [[1.5, 2.5], [3.5, 4.5]], "float64")
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        a = ours[1:].storage()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns once a process
        b = theirs[1:].storage()
    assert (a.size(), len(a), a.element_size(), a.nbytes()) == (b.size(), len(b), b.element_size(), b.nbytes())
    assert a.tolist() == b.tolist() and a[3] == b[3] == 4.5
    assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
    assert a.untyped() is ours.untyped_storage()


def test_storages_cannot_be_resized(torch):
    ours = tensor.ones(3)
    assert ours.untyped_storage().resize_(12).nbytes() == 12
    with pytest.raises(RuntimeError, match="Trying to resize storage that is not resizable"):
        ours.untyped_storage().resize_(0)
    with pytest.raises(RuntimeError, match="Trying to resize storage that is not resizable"):
        torch.from_numpy(np.ones(3, np.float32)).untyped_storage().resize_(0)


def test_new_storages(torch):
    for lib in (tensor, torch):
        empty, sized, listed = lib.UntypedStorage(), lib.UntypedStorage(8), lib.UntypedStorage([1, 2, 255])
        assert (empty.nbytes(), sized.nbytes(), listed.tolist()) == (0, 8, [1, 2, 255])
        assert sized.tolist() == [0] * 8 or lib is torch  # torch's are uninitialised
        assert not sized.is_pinned() and str(sized.device) == "cpu"
    with pytest.raises(TypeError, match="expected a size or a sequence"):
        tensor.UntypedStorage(1.5)


@pytest.mark.parametrize(
    "args",
    [(), ("storage", 3, (3,), (1,)), ("storage", 1, (2, 2), (1, 2)), ("storage",), ("tensor",), ("typed",)],
    ids=["nothing", "offset", "strided", "whole_storage", "tensor", "typed_storage"],
)
def test_set_matches_torch(torch, args):
    results = []
    for lib in (tensor, torch):
        source = lib.arange(6.0)
        target = lib.zeros(2)
        if args and args[0] == "storage":
            target.set_(source.untyped_storage(), *args[1:])
        elif args and args[0] == "tensor":
            target.set_(source[1:].reshape(5))
        elif args and args[0] == "typed":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                target.set_(source.storage())
        else:
            target.set_()
        results.append((tuple(target.shape), target.stride(), target.numpy().tolist()))
        source.add_(10)  # the target is on the source's memory
        results.append(target.numpy().tolist())
    assert results[:2] == results[2:]


def test_set_errors(torch):
    storage = tensor.arange(4.0).untyped_storage()
    with pytest.raises(RuntimeError, match="out of bounds"):
        tensor.empty(0).set_(storage, 2, (3,), (1,))
    with pytest.raises(RuntimeError, match="dtype"):
        tensor.empty(0, dtype=tensor.float64).set_(tensor.ones(2))
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        tensor.ones(2, requires_grad=True).set_(storage)
    with pytest.raises(RuntimeError):  # torch's own storages grow instead of the first error
        torch.empty(0, dtype=torch.float64).set_(torch.ones(2))


def test_set_bumps_the_version_and_is_set_to(torch):
    for lib in (tensor, torch):
        source, target = lib.arange(6.0), lib.zeros(2)
        version = target._version
        target.set_(source)
        assert target._version > version
        assert target.is_set_to(source) and not target.is_set_to(source[1:])
        assert target.untyped_storage().data_ptr() == source.untyped_storage().data_ptr()


def test_shared_memory_storage():
    x = tensor.ones(4)
    assert not x.untyped_storage().is_shared()
    x.share_memory_()
    assert x.untyped_storage().is_shared()


def test_storages_on_every_device(device):
    x = tensor.arange(6.0, device=device)
    storage = x[2:].untyped_storage()
    assert storage is x.untyped_storage() and str(storage.device).startswith(device)
    assert storage.nbytes() == 24 or device == "cuda" and storage.nbytes() >= 24  # CuPy's pool rounds up
    assert storage.data_ptr() == x.data_ptr()
    target = tensor.empty(0, device=device).set_(storage, 1, (2, 2), (1, 2))
    np.testing.assert_array_equal(target.cpu().numpy(), [[1.0, 3.0], [2.0, 4.0]])
    storage[0:4].fill_(0)
    assert x[0].item() == 0.0
    assert storage.clone().cpu().tolist() == storage.cpu().tolist()
