"""Samplers: which indices a DataLoader reads, and in what order, as in ``torch.utils.data``.

Random samplers draw from a ``tensor.Generator`` (its numpy stream directly: a permutation of
20,000 indices costs well under a millisecond). Without a generator, ``RandomSampler`` seeds a
fresh one per epoch from the default generator, so ``tensor.manual_seed`` makes runs repeatable.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

import tensor

from ..errors import ProcessGroupStateError

__all__ = ["BatchSampler", "DistributedSampler", "RandomSampler", "Sampler", "SequentialSampler",
           "SubsetRandomSampler", "WeightedRandomSampler"]


def _numpy_rng(generator) -> np.random.Generator:
    """The numpy stream of ``generator`` (of the default generator if None).

    Raises:
        TypeError: if ``generator`` is not a ``tensor.Generator``.
    """
    if generator is None:
        return tensor.default_generator.numpy
    if not isinstance(generator, tensor.Generator):
        raise TypeError(f"generator must be a tensor.Generator, but got {type(generator).__name__}")
    return generator.numpy


def _draw_seed(generator=None) -> int:
    """A 63-bit seed drawn from ``generator`` (the default generator if None)."""
    return int(_numpy_rng(generator).integers(0, 2 ** 63, dtype=np.int64))


class Sampler:
    """Base class: subclasses define ``__iter__`` over indices (and usually ``__len__``)."""

    def __init__(self, data_source=None) -> None:
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``."""

    def __init__(self, data_source) -> None:
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation, or ``num_samples`` draws with ``replacement``.

    Without replacement and with ``num_samples > len(data_source)``, whole permutations follow
    one another.

    Raises:
        TypeError: for a non-bool ``replacement``, or (when iterated) a ``generator`` that is not a
            ``tensor.Generator``.
        ValueError: for a ``num_samples`` that is not a positive int.
        RuntimeError: (when iterated) for draws with ``replacement`` from an empty ``data_source``.
    """

    def __init__(self, data_source, replacement: bool = False, num_samples: int | None = None,
                 generator=None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or isinstance(self.num_samples, bool) or self.num_samples <= 0:
            raise ValueError(
                f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        """How many indices one pass yields (the dataset's length unless given)."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        if self.generator is None:
            rng = np.random.Generator(np.random.PCG64(_draw_seed()))
        else:
            rng = _numpy_rng(self.generator)
        if self.replacement:
            if n == 0:
                raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from=0 >= to={n}")
            return iter(rng.integers(0, n, size=self.num_samples).tolist())
        parts = [rng.permutation(n) for _ in range(self.num_samples // n)]
        if self.num_samples % n:
            parts.append(rng.permutation(n)[:self.num_samples % n])
        return iter(np.concatenate(parts).tolist() if parts else [])

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given ``indices`` in a random order."""

    def __init__(self, indices, generator=None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in _numpy_rng(self.generator).permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probabilities proportional to ``weights``.

    Without ``replacement``, once the indices of positive weight are used up the zero-weight ones
    follow in a random order (as PyTorch's CPU sampler does).

    Raises:
        ValueError: for a bad ``num_samples`` or ``replacement``, or ``weights`` not 1-d.
        RuntimeError: (when iterated) for negative, infinite or all-zero weights, or more samples
            than weights without ``replacement``.
    """

    def __init__(self, weights, num_samples: int, replacement: bool = True, generator=None) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        weights = tensor.as_tensor(weights, dtype=tensor.float64)
        if weights.dim() != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(weights.shape)}")
        self.weights = weights
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        if not self.replacement and self.num_samples <= len(self.weights):
            positive = int((self.weights > 0).sum())
            if 0 < positive < self.num_samples:
                return iter(self._positive_then_zero_weights(positive))
        return iter(tensor.multinomial(self.weights, self.num_samples, self.replacement,
                                       generator=self.generator).tolist())

    def _positive_then_zero_weights(self, positive: int) -> list[int]:
        """Without replacement and with fewer positive weights than ``num_samples``: the
        ``positive`` indices of positive weight in a weighted random order, then zero-weight indices
        in a uniform random order, as PyTorch's CPU sampler gives them (``tensor.multinomial``
        refuses this case, as PyTorch documents for ``torch.multinomial``)."""
        drawn = tensor.multinomial(self.weights, positive, generator=self.generator).tolist()
        zero = (self.weights == 0).nonzero().flatten().tolist()
        return drawn + _numpy_rng(self.generator).permutation(zero)[:self.num_samples - positive].tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Group another sampler's indices into lists of ``batch_size``.

        >>> list(BatchSampler(SequentialSampler(range(7)), batch_size=3, drop_last=False))
        [[0, 1, 2], [3, 4, 5], [6]]

    Raises:
        ValueError: for a ``batch_size`` that is not a positive int, or a non-bool ``drop_last``.
    """

    def __init__(self, sampler, batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        it = iter(self.sampler)
        size = self.batch_size
        if self.drop_last:
            yield from (list(batch) for batch in zip(*([it] * size)))
            return
        while True:
            batch = list(itertools.islice(it, size))
            if not batch:
                return
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size


def _world_default(what: str) -> int:
    import distrib  # noqa: PLC0415 - the sampler must import without the process-group machinery

    is_initialized = getattr(distrib, "is_initialized", None)
    if is_initialized is None or not is_initialized():
        raise ProcessGroupStateError(
            f"DistributedSampler: {what} was not given and the default process group is not initialized. "
            "help: call distrib.init_process_group(...) first (e.g. under launch/torchrun), or pass "
            "num_replicas= and rank= explicitly.")
    return distrib.get_world_size() if what == "num_replicas" else distrib.get_rank()


class DistributedSampler(Sampler):
    """This rank's share of the dataset: ``indices[rank::num_replicas]`` of a common order.

    The order (with ``shuffle``) is a permutation seeded with ``seed + epoch``, the same on every
    rank; call ``set_epoch(e)`` at the start of each epoch to change it. Unless ``drop_last``,
    indices from the front are repeated until every rank gets the same number.
    ``num_replicas`` and ``rank`` default to the world size and rank of the default process group.

    Raises:
        RuntimeError: if a default is needed but no process group is initialized (naming the fix).
        ValueError: for a rank outside ``[0, num_replicas - 1]``.
    """

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None, shuffle: bool = True,
                 seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None:
            num_replicas = _world_default("num_replicas")
        if rank is None:
            rank = _world_default("rank")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            g = tensor.Generator().manual_seed(self.seed + self.epoch)
            indices = tensor.randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Use ``epoch`` for the next shuffle (call it before each epoch, on every rank)."""
        self.epoch = epoch
