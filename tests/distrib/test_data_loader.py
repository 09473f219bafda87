"""DataLoader in one process: validation errors, frozen attributes, batching, len, seeding, pin_memory."""

from __future__ import annotations

import gc
import multiprocessing
import subprocess
import sys

import numpy as np
import pytest

import tensor
from distrib.data import (
    DataLoader,
    Dataset,
    IterableDataset,
    SequentialSampler,
    TensorDataset,
    get_worker_info,
)
from tests.helpers import assert_close


class Numbers(Dataset):
    def __init__(self, n=10):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"x": np.full(2, i, np.float32), "i": i}


class Count(IterableDataset):
    def __init__(self, n, length=None):
        self.n, self.length = n, length

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        if self.length is None:
            raise TypeError("no length")
        return self.length


_DS = Numbers()
_IT = Count(5)


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"num_workers": -1}, ValueError, "num_workers option should be non-negative"),
    ({"timeout": -1}, ValueError, "timeout option should be non-negative"),
    ({"prefetch_factor": 2}, ValueError, "prefetch_factor option could only be specified in multiprocessing"),
    ({"num_workers": 1, "prefetch_factor": -1}, ValueError, "prefetch_factor option should be non-negative"),
    ({"persistent_workers": True}, ValueError, "persistent_workers option needs num_workers > 0"),
    ({"sampler": [0, 1], "shuffle": True}, ValueError, "sampler option is mutually exclusive with shuffle"),
    ({"batch_sampler": [[0]], "batch_size": 2}, ValueError, "batch_sampler option is mutually exclusive with "
                                                            "batch_size, shuffle, sampler, and drop_last"),
    ({"batch_sampler": [[0]], "shuffle": True}, ValueError, "batch_sampler option is mutually exclusive"),
    ({"batch_sampler": [[0]], "sampler": [0]}, ValueError, "batch_sampler option is mutually exclusive"),
    ({"batch_sampler": [[0]], "drop_last": True}, ValueError, "batch_sampler option is mutually exclusive"),
    ({"batch_size": None, "drop_last": True}, ValueError, "batch_size=None option disables auto-batching and is "
                                                          "mutually exclusive with drop_last"),
    ({"multiprocessing_context": "spawn"}, ValueError, "multiprocessing_context can only be used with "
                                                       r"multi-process loading \(num_workers > 0\), but got "
                                                       "num_workers=0"),
    ({"num_workers": 1, "multiprocessing_context": "nope"}, ValueError, "multiprocessing_context option should "
                                                                        "specify a valid start method in"),
    ({"num_workers": 1, "multiprocessing_context": 3}, TypeError, "multiprocessing_context option should be a "
                                                                  "valid context object"),
])
def test_constructor_errors_match_torch(torch, kwargs, error, message):
    with pytest.raises(error, match=message):
        DataLoader(_DS, **kwargs)
    with pytest.raises(error, match=message):
        torch.utils.data.DataLoader(list(range(10)), **kwargs)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"shuffle": True}, "DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle=True"),
    ({"sampler": [0]}, "DataLoader with IterableDataset: expected unspecified sampler option"),
    ({"batch_sampler": [[0]]}, "DataLoader with IterableDataset: expected unspecified batch_sampler option"),
])
def test_iterable_dataset_refuses_samplers(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DataLoader(_IT, **kwargs)


@pytest.mark.parametrize("attr", ["batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                                  "persistent_workers"])
def test_attributes_are_frozen_after_construction(attr):
    loader = DataLoader(_DS, batch_size=2)
    with pytest.raises(ValueError, match=f"{attr} attribute should not be set after DataLoader is initialized"):
        setattr(loader, attr, None)
    loader.num_workers = 0  # not frozen, as in PyTorch


def test_multiprocessing_context_accepts_names_and_context_objects():
    assert DataLoader(_DS, num_workers=1, multiprocessing_context="fork").multiprocessing_context.get_start_method() \
        == "fork"
    ctx = multiprocessing.get_context("spawn")
    assert DataLoader(_DS, num_workers=1, multiprocessing_context=ctx).multiprocessing_context is ctx


@pytest.mark.parametrize(("n", "batch_size", "drop_last"), [(10, 3, False), (10, 3, True), (10, 1, False),
                                                            (0, 4, False), (4, 10, True)])
def test_batches_and_len_match_torch(torch, n, batch_size, drop_last):
    x = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
    ours = list(DataLoader(TensorDataset(tensor.from_numpy(x)), batch_size=batch_size, drop_last=drop_last))
    ref_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.from_numpy(x)),
                                             batch_size=batch_size, drop_last=drop_last)
    theirs = list(ref_loader)
    assert len(DataLoader(list(range(n)), batch_size=batch_size, drop_last=drop_last)) == len(ref_loader)
    assert len(ours) == len(theirs)
    for (a,), (b,) in zip(ours, theirs):
        assert_close(a, tensor.from_numpy(b.numpy()))


def test_dict_samples_become_a_dict_of_batches():
    batch = next(iter(DataLoader(_DS, batch_size=4)))
    assert set(batch) == {"x", "i"}
    assert_close(batch["i"], tensor.tensor([0, 1, 2, 3]))
    assert batch["x"].shape == (4, 2)


def test_batch_size_none_converts_single_samples():
    items = list(DataLoader(_DS, batch_size=None))
    assert len(items) == 10
    assert_close(items[3]["x"], tensor.tensor([3.0, 3.0]))
    assert items[3]["i"] == 3


def test_custom_batch_sampler_and_collate_fn():
    loader = DataLoader(_DS, batch_sampler=[[3, 1], [0]], collate_fn=lambda b: [s["i"] for s in b])
    assert list(loader) == [[3, 1], [0]]
    assert len(loader) == 2
    assert loader.batch_size is None


def test_shuffle_follows_the_generator_and_covers_everything():
    def epoch(seed):
        loader = DataLoader(list(range(20)), batch_size=5, shuffle=True, generator=tensor.Generator().manual_seed(seed))
        return [b.tolist() for b in loader]

    first = epoch(1)
    assert sorted(sum(first, [])) == list(range(20))
    assert epoch(1) == first
    assert epoch(2) != first


def test_sampler_option_is_used():
    assert [b.tolist() for b in DataLoader(list(range(6)), batch_size=2, sampler=[5, 4, 3])] == [[5, 4], [3]]
    assert [b.tolist() for b in DataLoader(list(range(3)), sampler=SequentialSampler(range(3)))] == [[0], [1], [2]]


def test_iterable_dataset_batches_len_and_drop_last():
    assert [b.tolist() for b in DataLoader(_IT, batch_size=2)] == [[0, 1], [2, 3], [4]]
    assert [b.tolist() for b in DataLoader(_IT, batch_size=2, drop_last=True)] == [[0, 1], [2, 3]]
    assert [int(b) for b in DataLoader(_IT, batch_size=None)] == [0, 1, 2, 3, 4]
    assert len(DataLoader(Count(5, length=5), batch_size=2)) == 3
    assert len(DataLoader(Count(5, length=5), batch_size=2, drop_last=True)) == 2
    with pytest.raises(TypeError, match="no length"):
        len(DataLoader(_IT))


def test_iterable_dataset_longer_than_its_len_warns():
    loader = DataLoader(Count(5, length=2), batch_size=None)
    assert len(loader) == 2
    with pytest.warns(UserWarning, match="was reported to be 2"):
        list(loader)


def test_get_worker_info_is_none_in_the_main_process():
    assert get_worker_info() is None


def test_pin_memory_without_a_gpu_warns_and_changes_nothing():
    with pytest.warns(UserWarning, match="'pin_memory' argument is set as true but no accelerator is found"):
        batch = next(iter(DataLoader(_DS, batch_size=2, pin_memory=True)))
    assert_close(batch["i"], tensor.tensor([0, 1]))


def test_too_many_workers_warns():
    with pytest.warns(UserWarning, match="This DataLoader will create 1000 worker processes in total"):
        DataLoader(_DS, num_workers=1000)


def test_iterator_cannot_be_pickled():
    import pickle

    with pytest.raises(NotImplementedError, match="cannot be pickled"):
        pickle.dumps(iter(DataLoader(_DS)))


def test_torch_submodule_spellings():
    # from torch.utils.data.distributed import DistributedSampler, and the other submodules' names
    from distrib.data import DistributedSampler, dataloader, distributed, get_worker_info, sampler

    assert distributed.DistributedSampler is DistributedSampler is sampler.DistributedSampler
    assert dataloader.get_worker_info is get_worker_info


@pytest.mark.parametrize("kwargs", [{"num_workers": 1, "prefetch_factor": 0},
                                    {"num_workers": 1, "prefetch_factor": 0, "persistent_workers": True},
                                    {"timeout": 5}])
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # torch's half-made iterator
def test_iterating_refuses_what_torch_refuses(torch, kwargs):
    # prefetch_factor=0 used to give an empty epoch; torch refuses both before starting any worker
    with pytest.raises(AssertionError) as theirs:
        list(torch.utils.data.DataLoader(list(range(4)), **kwargs))
    message = str(theirs.value)
    del theirs
    gc.collect()  # here, under this test's filter: torch's iterator complains as it is collected
    with pytest.raises(AssertionError, match=message):
        list(DataLoader(list(range(4)), **kwargs))
    with pytest.raises(AssertionError, match=message):
        list(DataLoader(Count(4), **kwargs))


def test_a_generator_that_is_not_a_generator_is_a_type_error(torch):
    with pytest.raises(TypeError):
        list(torch.utils.data.DataLoader(list(range(3)), generator=5))
    with pytest.raises(TypeError, match="generator must be a tensor.Generator, but got int"):
        list(DataLoader(list(range(3)), generator=5))


def test_data_distributed_is_an_attribute_of_tensor_utils_data():
    # a fresh interpreter: here another test may already have imported the submodule
    code = ("import tensor; "
            "data = tensor.utils.data; assert data.distributed.DistributedSampler is data.DistributedSampler")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
