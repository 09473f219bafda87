"""Datasets: ``Dataset``, ``IterableDataset``, ``TensorDataset``, ``StackDataset``, ``Subset``,
``ConcatDataset``, ``ChainDataset`` and ``random_split``, as in ``torch.utils.data``.

A map-style dataset answers ``dataset[i]`` (and optionally ``__getitems__(indices)`` for a whole
batch at once); an iterable-style dataset is a stream (``__iter__``). With worker processes each
worker gets its own copy of an iterable dataset, which shards itself with ``get_worker_info()``.
"""

from __future__ import annotations

import abc
import bisect
import collections.abc
import itertools
import math
import operator
import warnings

import tensor

__all__ = ["ChainDataset", "ConcatDataset", "Dataset", "IterableDataset", "StackDataset", "Subset",
           "TensorDataset", "random_split"]


class Dataset:
    """A map-style dataset: subclasses define ``__getitem__`` (and usually ``__len__``)."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset, collections.abc.Iterable):
    """An iterable-style dataset: subclasses define ``__iter__`` (an abstract method, as in PyTorch:
    a subclass without it cannot be instantiated).

    With ``num_workers > 0`` every worker iterates its own copy; shard it in ``__iter__``:

        >>> class Range(IterableDataset):
        ...     def __init__(self, n):
        ...         self.n = n
        ...     def __iter__(self):
        ...         info = get_worker_info()
        ...         if info is None:
        ...             return iter(range(self.n))
        ...         return iter(range(info.id, self.n, info.num_workers))
    """

    @abc.abstractmethod
    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other: Dataset) -> ChainDataset:
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are ``tuple(t[index] for t in tensors)``.

    Raises:
        AssertionError: if the tensors' first dimensions differ.
    """

    def __init__(self, *tensors) -> None:
        if any(tensors[0].size(0) != t.size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


def _batch_of(dataset, indices: list) -> list:
    """``[dataset[i] for i in indices]``, through ``dataset.__getitems__`` when it has one.

    Raises:
        ValueError: if ``__getitems__`` returns a wrong number of samples.
    """
    if not callable(getattr(dataset, "__getitems__", None)):
        return [dataset[i] for i in indices]
    items = dataset.__getitems__(indices)
    if len(items) != len(indices):
        raise ValueError(f"Nested dataset's output size mismatch. Expected {len(indices)}, got {len(items)}")
    return items


class StackDataset(Dataset):
    """Zip datasets: ``StackDataset(a, b)[i] == (a[i], b[i])``; with keywords, a dict.

    Raises:
        ValueError: for both positional and keyword datasets, none at all, or different lengths.
    """

    def __init__(self, *args, **kwargs) -> None:
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like "
                             "input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        parts = list(args) if args else list(kwargs.values())
        self._length = len(parts[0])
        if any(self._length != len(d) for d in parts):
            raise ValueError("Size mismatch between datasets")
        self.datasets = args if args else kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices: list) -> list:
        """The samples at ``indices``, reading each dataset with its own ``__getitems__`` if it has one.

        Raises:
            ValueError: if a dataset's ``__getitems__`` returns a wrong number of samples.
        """
        if type(self).__getitem__ is not StackDataset.__getitem__:  # a subclass changed how items are made
            return [self[i] for i in indices]
        parts = self.datasets.values() if isinstance(self.datasets, dict) else self.datasets
        rows = zip(*(_batch_of(d, indices) for d in parts))
        if isinstance(self.datasets, dict):
            return [dict(zip(self.datasets, row)) for row in rows]
        return list(rows)

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset):
    """The concatenation of map-style datasets.

    Raises:
        AssertionError: for no datasets, or an IterableDataset among them.
    """

    @staticmethod
    def cumsum(sequence) -> list[int]:
        """Running totals of the lengths of ``sequence``'s datasets."""
        return list(itertools.accumulate(len(d) for d in sequence))

    def __init__(self, datasets) -> None:
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        dataset_idx = bisect.bisect_right(self.cumulative_sizes, idx)
        sample_idx = idx if dataset_idx == 0 else idx - self.cumulative_sizes[dataset_idx - 1]
        return self.datasets[dataset_idx][sample_idx]


class ChainDataset(IterableDataset):
    """Iterable datasets one after the other, chained lazily.

    Raises:
        AssertionError: (when iterated or measured) if a member is not an IterableDataset.
    """

    def __init__(self, datasets) -> None:
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(d)
        return total


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``."""

    def __init__(self, dataset, indices) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list) -> list:
        if type(self).__getitem__ is not Subset.__getitem__:  # a subclass changed how items are made
            return [self[i] for i in indices]
        return _batch_of(self.dataset, [self.indices[i] for i in indices])

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset, lengths, generator=None) -> list[Subset]:
    """Split ``dataset`` at random into non-overlapping ``Subset``s of the given lengths.

    ``lengths`` may be fractions summing to 1: each split gets ``floor(frac * len(dataset))``,
    and the remainder is dealt out one by one, round-robin from the first split.

    Raises:
        ValueError: for a fraction outside [0, 1], or lengths not summing to ``len(dataset)``.
        TypeError: for lengths that are neither fractions summing to 1 nor integers.

        >>> train, val = random_split(range(10), [0.8, 0.2], generator=tensor.Generator().manual_seed(0))
        >>> len(train), len(val)
        (8, 2)
    """
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            sizes.append(math.floor(len(dataset) * frac))
        remainder = len(dataset) - sum(sizes)
        for i in range(remainder):
            sizes[i % len(sizes)] += 1
        lengths = sizes
        for i, length in enumerate(lengths):
            if length == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=2)
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = tensor.randperm(operator.index(sum(lengths)), generator=generator).tolist()
    return [Subset(dataset, indices[offset - length:offset])
            for offset, length in zip(itertools.accumulate(lengths), lengths)]
