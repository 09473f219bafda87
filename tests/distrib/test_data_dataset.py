"""distrib.data datasets and samplers, against torch.utils.data where it is installed."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import tensor
from distrib.data import (
    BatchSampler,
    ChainDataset,
    ConcatDataset,
    Dataset,
    DistributedSampler,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    StackDataset,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    random_split,
)
from tests.helpers import assert_close


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i * i


class Stream(IterableDataset):
    def __init__(self, values):
        self.values = values

    def __iter__(self):
        return iter(self.values)

    def __len__(self):
        return len(self.values)


# ---------------------------------------------------------------- datasets
def test_tensor_dataset_indexes_every_tensor_along_dim0(device):
    x = tensor.arange(12, device=device).reshape(4, 3)
    y = tensor.arange(4, device=device)
    ds = TensorDataset(x, y)
    assert len(ds) == 4
    sample = ds[2]
    assert_close(sample[0], tensor.tensor([6, 7, 8], device=device))
    assert sample[1].item() == 2


def test_tensor_dataset_size_mismatch():
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(tensor.zeros(3), tensor.zeros(4))


def test_concat_dataset_maps_indices_across_parts():
    ds = ConcatDataset([Squares(3), Squares(2)])
    assert len(ds) == 5
    assert ds.cumulative_sizes == [3, 5]
    assert [ds[i] for i in range(5)] == [0, 1, 4, 0, 1]
    assert ds[-1] == 1
    assert [(Squares(2) + Squares(1))[i] for i in range(3)] == [0, 1, 0]


@pytest.mark.parametrize(("build", "error", "message"), [
    (lambda: ConcatDataset([]), AssertionError, "datasets should not be an empty iterable"),
    (lambda: ConcatDataset([Stream([1])]), AssertionError, "ConcatDataset does not support IterableDataset"),
    (lambda: ConcatDataset([Squares(2)])[-3], ValueError, "absolute value of index should not exceed"),
    (lambda: list(ChainDataset([Squares(2)])), AssertionError, "ChainDataset only supports IterableDataset"),
    (lambda: StackDataset(), ValueError, "At least one dataset should be passed"),
    (lambda: StackDataset(Squares(2), b=Squares(2)), ValueError, "but both types are given"),
    (lambda: StackDataset(Squares(2), Squares(3)), ValueError, "Size mismatch between datasets"),
    (lambda: Dataset()[0], NotImplementedError, "Subclasses of Dataset should implement __getitem__"),
])
def test_dataset_errors(build, error, message):
    with pytest.raises(error, match=message):
        build()


def test_chain_and_stack_datasets():
    chain = ChainDataset([Stream([1, 2]), Stream([3])])
    assert list(chain) == [1, 2, 3]
    assert len(chain) == 3
    assert list(Stream([1]) + Stream([2])) == [1, 2]
    assert StackDataset(Squares(3), Squares(3))[2] == (4, 4)
    assert StackDataset(a=Squares(3), b=Stream([0, 1, 2]).values)[1] == {"a": 1, "b": 1}


def test_subset_and_getitems():
    sub = Subset(Squares(10), [9, 3, 1])
    assert len(sub) == 3
    assert [sub[i] for i in range(3)] == [81, 9, 1]
    assert sub.__getitems__([0, 2]) == [81, 1]


def test_random_split_lengths_and_fractions_match_torch(torch):
    for lengths in ([3, 7], [0.3, 0.3, 0.4], [0.5, 0.5], [0.34, 0.33, 0.33]):
        ours = random_split(range(10), lengths, generator=tensor.Generator().manual_seed(1))
        theirs = torch.utils.data.random_split(range(10), lengths, generator=torch.Generator().manual_seed(1))
        assert [len(s) for s in ours] == [len(s) for s in theirs]
        assert sorted(i for s in ours for i in s) == list(range(10))


def test_random_split_is_reproducible_with_a_generator():
    first = random_split(range(20), [0.25, 0.75], generator=tensor.Generator().manual_seed(5))
    again = random_split(range(20), [0.25, 0.75], generator=tensor.Generator().manual_seed(5))
    assert [list(s) for s in first] == [list(s) for s in again]


@pytest.mark.parametrize(("lengths", "message"), [
    ([3, 3], "Sum of input lengths does not equal the length of the input dataset"),
    ([1.5, -0.5], "Fraction at index 0 is not between 0 and 1"),
])
def test_random_split_errors(lengths, message):
    with pytest.raises(ValueError, match=message):
        random_split(range(10), lengths)


def test_random_split_warns_about_an_empty_split():
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(range(1), [0.5, 0.5])


# ---------------------------------------------------------------- samplers
def test_sequential_and_batch_samplers_match_torch(torch):
    for n, size, drop_last in [(10, 3, False), (10, 3, True), (9, 3, True), (0, 2, False), (5, 8, True)]:
        ours = BatchSampler(SequentialSampler(range(n)), size, drop_last)
        theirs = torch.utils.data.BatchSampler(torch.utils.data.SequentialSampler(range(n)), size, drop_last)
        assert list(ours) == list(theirs)
        assert len(ours) == len(theirs)


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"batch_size": 0, "drop_last": False}, ValueError, "batch_size should be a positive integer value"),
    ({"batch_size": True, "drop_last": False}, ValueError, "batch_size should be a positive integer value"),
    ({"batch_size": 2, "drop_last": 1}, ValueError, "drop_last should be a boolean value"),
])
def test_batch_sampler_errors(kwargs, error, message):
    with pytest.raises(error, match=message):
        BatchSampler(range(4), **kwargs)


@pytest.mark.parametrize(("build", "error", "message"), [
    (lambda: RandomSampler(range(3), replacement=1), TypeError, "replacement should be a boolean value"),
    (lambda: RandomSampler(range(3), num_samples=0), ValueError, "num_samples should be a positive integer"),
    (lambda: RandomSampler([]), ValueError, "num_samples should be a positive integer value, but got num_samples=0"),
    (lambda: WeightedRandomSampler([1.0], 0), ValueError, "num_samples should be a positive integer"),
    (lambda: WeightedRandomSampler([1.0], 2, replacement=None), ValueError, "replacement should be a boolean"),
    (lambda: WeightedRandomSampler([[1.0]], 2), ValueError, r"weights should be a 1d sequence but given weights "
                                                            r"have shape \(1, 1\)"),
    (lambda: DistributedSampler(range(4), num_replicas=2, rank=2), ValueError,
     r"Invalid rank 2, rank should be in the interval \[0, 1\]"),
    (lambda: DistributedSampler(range(4)), ValueError, "init_process_group"),  # as PyTorch
])
def test_sampler_errors(build, error, message):
    with pytest.raises(error, match=message):
        build()


def test_random_sampler_is_a_permutation_and_follows_its_generator():
    ours = list(RandomSampler(range(50), generator=tensor.Generator().manual_seed(3)))
    assert sorted(ours) == list(range(50))
    assert ours == list(RandomSampler(range(50), generator=tensor.Generator().manual_seed(3)))
    assert ours != list(RandomSampler(range(50), generator=tensor.Generator().manual_seed(4)))
    tensor.manual_seed(9)
    first = list(RandomSampler(range(50)))
    tensor.manual_seed(9)
    assert list(RandomSampler(range(50))) == first


@pytest.mark.parametrize(("n", "num_samples", "replacement"), [(5, 12, False), (5, 3, False), (5, 40, True)])
def test_random_sampler_num_samples(n, num_samples, replacement):
    sampler = RandomSampler(range(n), replacement=replacement, num_samples=num_samples,
                            generator=tensor.Generator().manual_seed(0))
    drawn = list(sampler)
    assert len(drawn) == len(sampler) == num_samples
    assert all(0 <= i < n for i in drawn)
    if not replacement:  # whole permutations, then part of one
        counts = collections.Counter(drawn)
        assert max(counts.values()) - min(counts.values()) <= 1


def test_subset_random_and_weighted_samplers():
    drawn = list(SubsetRandomSampler([10, 20, 30], generator=tensor.Generator().manual_seed(0)))
    assert sorted(drawn) == [10, 20, 30]
    weighted = list(WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 200, generator=tensor.Generator().manual_seed(0)))
    assert set(weighted) == {1, 3}
    assert weighted.count(3) > weighted.count(1)
    unique = list(WeightedRandomSampler([1.0, 1.0, 1.0], 3, replacement=False))
    assert sorted(unique) == [0, 1, 2]


@pytest.mark.parametrize(("n", "replicas", "drop_last", "shuffle"), [
    (10, 3, False, False), (10, 3, True, False), (10, 4, False, True), (11, 4, True, True), (2, 5, False, False),
])
def test_distributed_sampler_matches_torch_split(torch, n, replicas, drop_last, shuffle):
    ours = [list(DistributedSampler(range(n), replicas, r, shuffle=shuffle, drop_last=drop_last))
            for r in range(replicas)]
    theirs = [list(torch.utils.data.DistributedSampler(range(n), replicas, r, shuffle=False, drop_last=drop_last))
              for r in range(replicas)]
    assert [len(part) for part in ours] == [len(part) for part in theirs]
    if not shuffle:
        assert ours == theirs
    union = sorted(set(i for part in ours for i in part))
    assert union == (list(range(n)) if not drop_last else union)
    if drop_last:  # no repeats, equal shares
        flat = [i for part in ours for i in part]
        assert len(flat) == len(set(flat))


def test_distributed_sampler_epoch_changes_the_order_identically_on_all_ranks():
    samplers = [DistributedSampler(range(20), num_replicas=2, rank=r, seed=7) for r in range(2)]
    epoch0 = [list(s) for s in samplers]
    assert sorted(epoch0[0] + epoch0[1]) == list(range(20))
    for s in samplers:
        s.set_epoch(1)
    epoch1 = [list(s) for s in samplers]
    assert epoch1 != epoch0
    assert sorted(epoch1[0] + epoch1[1]) == list(range(20))
    again = DistributedSampler(range(20), num_replicas=2, rank=0, seed=7)
    again.set_epoch(1)
    assert list(again) == epoch1[0]


def test_distributed_sampler_defaults_come_from_the_process_group(monkeypatch):
    import distrib

    monkeypatch.setattr(distrib, "is_initialized", lambda: True, raising=False)
    monkeypatch.setattr(distrib, "get_world_size", lambda: 4, raising=False)
    monkeypatch.setattr(distrib, "get_rank", lambda: 3, raising=False)
    sampler = DistributedSampler(range(8), shuffle=False)
    assert (sampler.num_replicas, sampler.rank) == (4, 3)
    assert list(sampler) == [3, 7]


def test_weighted_sampler_keeps_float64_weights():
    sampler = WeightedRandomSampler(np.array([1, 2, 3]), 4)
    assert sampler.weights.dtype == tensor.float64


# ---------------------------------------------------------------- regressions against torch
class _Batched(Dataset):
    """Records the batched reads; ``short`` returns one sample too few."""

    def __init__(self, n, short=False):
        self.n, self.short, self.calls = n, short, []

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return -i

    def __getitems__(self, indices):
        self.calls.append(list(indices))
        return [-i for i in indices][:len(indices) - self.short]


def test_stack_dataset_getitems_matches_torch_and_reads_in_batches(torch):
    batched = _Batched(4)
    assert StackDataset(batched, [5, 6, 7, 8]).__getitems__([3, 0]) == [(-3, 8), (0, 5)]
    assert batched.calls == [[3, 0]]
    assert StackDataset(a=[1, 2], b=[3, 4]).__getitems__([1, 0]) == \
        torch.utils.data.StackDataset(a=[1, 2], b=[3, 4]).__getitems__([1, 0])
    assert StackDataset([1, 2], [3, 4]).__getitems__([0, 1]) == \
        torch.utils.data.StackDataset([1, 2], [3, 4]).__getitems__([0, 1])
    with pytest.raises(ValueError, match="Nested dataset's output size mismatch. Expected 2, got 1"):
        StackDataset(_Batched(3, short=True), [0, 1, 2]).__getitems__([0, 1])


def test_stack_dataset_subclass_items_are_kept_by_getitems():
    class Doubled(StackDataset):
        def __getitem__(self, index):
            return tuple(2 * v for v in super().__getitem__(index))

    assert Doubled([1, 2], [3, 4]).__getitems__([1]) == [(4, 8)]


def test_iterable_dataset_is_abstract_as_torch(torch):
    for library in (torch.utils.data, __import__("distrib").data):
        with pytest.raises(TypeError, match="Can't instantiate abstract class IterableDataset"):
            library.IterableDataset()
        with pytest.raises(TypeError, match="Can't instantiate abstract class IterableDataset"):
            library.ConcatDataset([library.IterableDataset()])
    assert not isinstance([1], IterableDataset)


@pytest.mark.parametrize("as_tensor", [False, True])
@pytest.mark.parametrize("lengths", [[3, 7], [0.3, 0.7]])
def test_random_split_takes_tensor_lengths_as_torch(torch, lengths, as_tensor):
    ours = tensor.tensor(lengths) if as_tensor else lengths
    theirs = torch.tensor(lengths) if as_tensor else lengths
    assert [len(s) for s in random_split(range(10), ours)] == \
        [len(s) for s in torch.utils.data.random_split(range(10), theirs)]


def test_random_split_refuses_float_lengths_as_torch(torch):
    with pytest.raises(TypeError):
        torch.utils.data.random_split(range(10), [3.0, 7.0])
    with pytest.raises(TypeError, match="'float' object cannot be interpreted as an integer"):
        random_split(range(10), [3.0, 7.0])


def test_random_sampler_with_replacement_on_nothing_is_a_runtime_error(torch):
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to'"):
        list(torch.utils.data.RandomSampler([], replacement=True, num_samples=3))
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to'"):
        list(RandomSampler([], replacement=True, num_samples=3))


@pytest.mark.parametrize(("weights", "num_samples"), [([1.0, 0.0, 0.0], 3), ([0.0, 0.0, 1.0, 0.0, 2.0, 0.0], 6),
                                                      ([0.0, 3.0, 0.0, 0.0], 3)])
def test_weighted_sampler_without_replacement_takes_zero_weights_last_as_torch(torch, weights, num_samples):
    positive = sum(w > 0 for w in weights)
    ours = list(WeightedRandomSampler(weights, num_samples, replacement=False,
                                      generator=tensor.Generator().manual_seed(0)))
    theirs = list(torch.utils.data.WeightedRandomSampler(weights, num_samples, replacement=False))
    for drawn in (ours, theirs):
        assert len(drawn) == len(set(drawn)) == num_samples
        assert all(weights[i] > 0 for i in drawn[:positive])
        assert all(weights[i] == 0 for i in drawn[positive:])


@pytest.mark.parametrize("weights", [[0.0, 0.0], [1.0, -1.0]])
def test_weighted_sampler_without_replacement_still_refuses_bad_weights(torch, weights):
    with pytest.raises(RuntimeError):
        list(torch.utils.data.WeightedRandomSampler(weights, 2, replacement=False))
    with pytest.raises(RuntimeError, match="invalid multinomial distribution"):
        list(WeightedRandomSampler(weights, 2, replacement=False))
