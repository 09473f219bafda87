"""DataLoader worker pools: same batches as in-process, ordering, persistence, seeding, start methods,
IterableDataset sharding, and reuse of the shared-memory batch buffers."""

from __future__ import annotations

import collections
import random
import warnings

import numpy as np
import pytest

import tensor
from distrib.data import DataLoader, Dataset, IterableDataset, TensorDataset, default_collate, get_worker_info
from tests.distrib._data_procs import children, mapped_buffers, shm_names
from tests.helpers import assert_close, wait_until

Pair = collections.namedtuple("Pair", ["a", "b"])


class Mixed(Dataset):
    """Samples with every kind of leaf."""

    def __len__(self):
        return 23

    def __getitem__(self, i):
        return {"x": tensor.full((3, 2), float(i)), "arr": np.arange(4, dtype=np.int16) + i, "label": i,
                "w": i / 2, "name": f"s{i}", "pair": Pair(np.float64(i), [i, -i])}


class Randoms(Dataset):
    """Each sample draws from every RNG a worker seeds."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return random.random(), float(np.random.rand()), tensor.rand(1).item(), get_worker_info().id


class Shards(IterableDataset):
    """0..n-1, split between workers by ``get_worker_info()``."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))


@pytest.fixture(autouse=True)
def _no_leftovers():
    before_children, before_shm = children(), shm_names()
    yield
    assert children() <= before_children, "a worker process was left behind"
    # Other processes' semaphores appear in /dev/shm for an instant (Python unlinks them at
    # once), so only a name that stays counts as left behind.
    assert wait_until(lambda: shm_names() <= before_shm, timeout=5), "a /dev/shm segment was left behind"


def _assert_batches_equal(ours, expected):
    assert type(ours) is type(expected)
    if isinstance(expected, tensor.Tensor):
        assert_close(ours, expected)
    elif isinstance(expected, np.ndarray):
        np.testing.assert_array_equal(ours, expected)
    elif isinstance(expected, dict):
        assert list(ours) == list(expected)
        for k in expected:
            _assert_batches_equal(ours[k], expected[k])
    elif isinstance(expected, (list, tuple)):
        assert len(ours) == len(expected)
        for a, b in zip(ours, expected):
            _assert_batches_equal(a, b)
    else:
        assert ours == expected


@pytest.mark.parametrize("collate_fn", [None, lambda b: default_collate(b)["x"] * 2, lambda b: b])
def test_workers_give_the_same_batches_as_the_main_process(collate_fn):
    options = {"batch_size": 5, "collate_fn": collate_fn}
    expected = list(DataLoader(Mixed(), **options))
    got = list(DataLoader(Mixed(), num_workers=2, **options))
    assert len(got) == len(expected) == 5
    for ours, ref in zip(got, expected):
        _assert_batches_equal(ours, ref)


def test_batch_size_none_and_a_custom_numpy_collate_through_workers():
    items = list(DataLoader(Mixed(), batch_size=None, num_workers=2))
    assert [int(item["label"]) for item in items] == list(range(23))
    assert_close(items[4]["x"], tensor.full((3, 2), 4.0))
    stack_arrays = lambda b: np.stack([s["arr"] for s in b])  # noqa: E731
    arrays = list(DataLoader(Mixed(), batch_size=4, num_workers=1, collate_fn=stack_arrays))
    assert isinstance(arrays[0], np.ndarray)
    np.testing.assert_array_equal(arrays[1][0], np.arange(4, dtype=np.int16) + 4)


def test_shuffled_epochs_match_the_main_process_with_the_same_generator():
    data = TensorDataset(tensor.arange(40).reshape(20, 2))

    def run(num_workers):
        loader = DataLoader(data, batch_size=3, shuffle=True, num_workers=num_workers,
                            generator=tensor.Generator().manual_seed(11))
        return [b[0].tolist() for b in loader]

    assert run(2) == run(0)


def test_out_of_order_delivery_gives_every_batch_once():
    loader = DataLoader(list(range(50)), batch_size=4, num_workers=2, in_order=False, prefetch_factor=3)
    got = [b.tolist() for b in loader]
    assert sorted(sum(got, [])) == list(range(50))
    assert len(got) == 13


def test_persistent_workers_keep_their_pool_across_epochs():
    loader = DataLoader(list(range(9)), batch_size=2, num_workers=2, persistent_workers=True)
    first = [b.tolist() for b in loader]
    pids = loader._iterator.worker_pids
    it = iter(loader)
    next(it)  # abandon the epoch half way
    second = [b.tolist() for b in loader]
    assert first == second == [[0, 1], [2, 3], [4, 5], [6, 7], [8]]
    assert loader._iterator.worker_pids == pids
    assert set(pids) <= children()
    del loader, it


def test_persistent_iterable_dataset_restarts_every_epoch():
    loader = DataLoader(Shards(7), batch_size=2, num_workers=2, persistent_workers=True)
    for _ in range(2):
        assert [b.tolist() for b in loader] == [[0, 2], [1, 3], [4, 6], [5]]
    del loader


@pytest.mark.parametrize("in_order", [True, False])
def test_iterable_dataset_is_sharded_by_get_worker_info(in_order):
    with warnings.catch_warnings():  # more workers than CPUs on a small machine: fine here
        warnings.simplefilter("ignore", UserWarning)
        got = [b.tolist() for b in DataLoader(Shards(11), batch_size=3, num_workers=3, in_order=in_order)]
    assert sorted(sum(got, [])) == list(range(11))
    if in_order:
        assert got[:3] == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]


def test_unsharded_iterable_dataset_repeats_per_worker():
    got = [item[0] for item in DataLoader(_Plain(3), batch_size=None, num_workers=2)]
    assert sorted(got) == [0, 0, 1, 1, 2, 2]


class _Plain(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter([[i] for i in range(self.n)])


def test_workers_are_seeded_differently_and_reproducibly():
    def run(seed):
        loader = DataLoader(Randoms(), batch_size=2, num_workers=2, generator=tensor.Generator().manual_seed(seed))
        return [[column.tolist() for column in batch] for batch in loader]

    first = run(5)
    assert run(5) == first
    assert run(6) != first
    by_worker = {}
    for batch in first:
        by_worker.setdefault(batch[3][0], []).append(batch[:3])
    assert set(by_worker) == {0, 1}
    for rng in range(3):  # python random, numpy and our RNG: each stream differs between the workers
        assert by_worker[0][0][rng] != by_worker[1][0][rng]


def _record_init(worker_id):
    info = get_worker_info()
    assert info.id == worker_id
    info.dataset.tag = f"init{worker_id}-of-{info.num_workers}-seed{info.seed % 1000}"


class Tagged(Dataset):
    tag = "none"

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return self.tag


def test_worker_init_fn_and_worker_info():
    loader = DataLoader(Tagged(), batch_size=2, num_workers=2, worker_init_fn=_record_init,
                        generator=tensor.Generator().manual_seed(0))
    tags = [b[0] for b in loader]
    assert tags[0].startswith("init0-of-2-seed") and tags[1].startswith("init1-of-2-seed")
    with pytest.raises(AttributeError, match="cannot assign to field 'id'"):
        _frozen_info().id = 3


def _frozen_info():
    from distrib.data import WorkerInfo

    return WorkerInfo(id=0, num_workers=1, seed=0, dataset=None)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_spawn_and_forkserver_carry_lambdas_and_local_classes(method):
    class Local(Dataset):
        def __len__(self):
            return 6

        def __getitem__(self, i):
            return tensor.tensor([i, get_worker_info().id])

    scale = 3
    loader = DataLoader(Local(), batch_size=2, num_workers=2, multiprocessing_context=method,
                        collate_fn=lambda b: default_collate(b) * scale,
                        worker_init_fn=lambda wid: random.seed(wid))
    batches = [b.tolist() for b in loader]
    assert batches == [[[0, 0], [3, 0]], [[6, 3], [9, 3]], [[12, 0], [15, 0]]]


def test_dataset_tensors_are_shared_not_copied_under_spawn():
    from distrib.data._pool import _sharing_dumps

    data = tensor.arange(1000.0)
    blob = _sharing_dumps(TensorDataset(data))
    assert len(blob) < 2000  # a handle, not 8000 bytes of data
    assert data.is_shared()


def test_steady_state_reuses_the_batch_buffers():
    loader = DataLoader(TensorDataset(tensor.randn(600, 50)), batch_size=10, num_workers=2, persistent_workers=True)
    for _ in range(2):
        for _batch in loader:
            pass
    pool = loader._iterator._pool
    buffers = sum(len(m) for m in pool.maps)
    assert buffers <= 2 * 6, f"{buffers} buffers for 2 epochs of 60 batches"
    del loader, pool, _batch
    assert mapped_buffers() == 0


def test_a_kept_batch_stays_valid_after_its_buffer_would_be_reused():
    loader = DataLoader(TensorDataset(tensor.arange(200.0).reshape(100, 2)), batch_size=10, num_workers=2)
    kept = [b[0] for b in loader]
    expected = tensor.arange(200.0).reshape(100, 2)
    for i, batch in enumerate(kept):
        assert_close(batch, expected[10 * i:10 * i + 10])
    assert not kept[0].is_shared()  # sending it on copies it (its buffer belongs to the loader)
    del kept, batch
    assert mapped_buffers() == 0
