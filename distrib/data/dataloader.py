"""``DataLoader``: batches from a dataset, in this process or from a pool of worker processes.

Same signature, defaults, validation errors and semantics as ``torch.utils.data.DataLoader``.
With ``num_workers > 0`` workers collate straight into reused shared-memory buffers and send a
few hundred bytes per batch (Note [shared-memory batch buffers] in ``_channel.py``); see
``_pool.py`` for how failures are detected and workers stopped.

Seeding: each new iterator draws ``base_seed`` from ``generator`` (or the default generator).
Worker ``i`` seeds Python's ``random`` and ``tensor`` with ``base_seed + i``, and numpy's global
RNG from ``SeedSequence([base_seed, i])``: workers differ from each other, and the same
generator state gives the same batches again.

Note [copy-on-read after fork]
With the ``fork`` start method, workers share the dataset's memory copy-on-write. Touching a
Python object (even reading it: its reference count changes) copies the page it is on, so a
dataset holding millions of small Python objects (a list of file names, a dict of labels)
slowly becomes one private copy per worker. Keep such data in numpy arrays or tensors: their
contents are never written by reading, so they stay shared.
"""

from __future__ import annotations

import itertools
import math
import os
import warnings
import weakref

from tensor.profiler import _recorder

from . import _pool, _worker
from ._pin_memory import pin_memory, pinning_available
from ._worker import get_worker_info  # noqa: F401 - torch.utils.data.dataloader's name too
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, _draw_seed

__all__ = ["DataLoader"]

_FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")


class _InfiniteConstantSampler(Sampler):
    """``None`` forever: the sampler of an IterableDataset (the dataset decides what comes next)."""

    def __iter__(self):
        while True:
            yield None


def _checked_prefetch_factor(num_workers: int, timeout: float, prefetch_factor: int | None,
                             persistent_workers: bool) -> int | None:
    """The prefetch factor to use (2 by default with workers), after PyTorch's checks of the worker
    options.

    Raises:
        ValueError: for a negative ``num_workers``, ``timeout`` or ``prefetch_factor``, or
            ``prefetch_factor``/``persistent_workers`` without workers.
    """
    if num_workers < 0:
        raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                         "multiprocessing.")
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers "
                         "> 0 to enable multiprocessing, otherwise set prefetch_factor to None.")
    if num_workers > 0 and prefetch_factor is None:
        prefetch_factor = 2
    elif prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError("prefetch_factor option should be non-negative")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")
    return prefetch_factor


def _check_iterable_options(shuffle, sampler, batch_sampler) -> None:
    if shuffle not in {False, None}:
        raise ValueError(
            f"DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle={shuffle}")
    if sampler is not None:
        raise ValueError(
            f"DataLoader with IterableDataset: expected unspecified sampler option, but got sampler={sampler}")
    if batch_sampler is not None:
        raise ValueError("DataLoader with IterableDataset: expected unspecified batch_sampler option, "
                         f"but got batch_sampler={batch_sampler}")


def _checked_batching(is_iterable: bool, shuffle, sampler, batch_sampler, batch_size, drop_last) -> tuple:
    """``(shuffle, batch_size, drop_last)`` as the loader uses them, after PyTorch's checks of how
    the sampling options combine (a ``batch_sampler`` replaces ``batch_size`` and ``drop_last``).

    Raises:
        ValueError: for the combinations PyTorch refuses.
    """
    if is_iterable:
        _check_iterable_options(shuffle, sampler, batch_sampler)
    else:
        shuffle = bool(shuffle)
    if sampler is not None and shuffle:
        raise ValueError("sampler option is mutually exclusive with shuffle")
    if batch_sampler is not None:
        if batch_size != 1 or shuffle or sampler is not None or drop_last:
            raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                             "and drop_last")
        return shuffle, None, False
    if batch_size is None and drop_last:
        raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                         "drop_last")
    return shuffle, batch_size, drop_last


def _default_sampler(dataset, is_iterable: bool, shuffle, generator) -> Sampler:
    if is_iterable:
        return _InfiniteConstantSampler()
    if shuffle:
        return RandomSampler(dataset, generator=generator)
    return SequentialSampler(dataset)


class DataLoader:
    """Iterate over ``dataset`` in batches, as ``torch.utils.data.DataLoader`` does.

        >>> loader = DataLoader(TensorDataset(tensor.arange(10)), batch_size=4)
        >>> [b[0].tolist() for b in loader]
        [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]

    Raises:
        ValueError: for the option combinations PyTorch refuses (negative ``num_workers`` or
            ``timeout``, ``prefetch_factor``/``persistent_workers``/``multiprocessing_context``
            without workers, ``sampler`` with ``shuffle``, ``batch_sampler`` with any of
            ``batch_size``/``shuffle``/``sampler``/``drop_last``, ``batch_size=None`` with
            ``drop_last``, an IterableDataset with ``shuffle``/``sampler``/``batch_sampler``),
            an unknown start method, or setting a frozen attribute after construction.
        TypeError: for a ``multiprocessing_context`` that is neither a name nor a context.
        AssertionError: (when iterated, as in PyTorch) for ``timeout > 0`` without workers, or
            ``prefetch_factor=0`` with workers.
    """

    __initialized = False

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None, sampler=None,
                 batch_sampler=None, num_workers: int = 0, collate_fn=None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0, worker_init_fn=None, multiprocessing_context=None,
                 generator=None, *, prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True) -> None:
        prefetch_factor = _checked_prefetch_factor(num_workers, timeout, prefetch_factor, persistent_workers)
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        self._is_iterable = isinstance(dataset, IterableDataset)
        shuffle, batch_size, drop_last = _checked_batching(self._is_iterable, shuffle, sampler, batch_sampler,
                                                           batch_size, drop_last)
        if sampler is None:
            sampler = _default_sampler(dataset, self._is_iterable, shuffle, generator)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self.__initialized = True
        self._IterableDataset_len_called = None
        self._iterator = None
        self.check_worker_number_rationality()

    # ------------------------------------------------------------ attributes
    @property
    def multiprocessing_context(self):
        """The multiprocessing context workers start in (None: ``distrib.multiprocessing``'s default)."""
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, multiprocessing_context) -> None:
        if multiprocessing_context is not None:
            if self.num_workers <= 0:
                raise ValueError("multiprocessing_context can only be used with multi-process loading "
                                 f"(num_workers > 0), but got num_workers={self.num_workers}")
            import multiprocessing.context as mp_context  # noqa: PLC0415

            from distrib import multiprocessing as dmp  # noqa: PLC0415 - loaded only for worker pools

            if isinstance(multiprocessing_context, str):
                valid = dmp.get_all_start_methods()
                if multiprocessing_context not in valid:
                    raise ValueError(f"multiprocessing_context option should specify a valid start method in "
                                     f"{valid!r}, but got multiprocessing_context={multiprocessing_context!r}")
                multiprocessing_context = dmp.get_context(multiprocessing_context)
            if not isinstance(multiprocessing_context, mp_context.BaseContext):
                raise TypeError("multiprocessing_context option should be a valid context object or a string "
                                "specifying the start method, but got "
                                f"multiprocessing_context={multiprocessing_context}")
        self.__multiprocessing_context = multiprocessing_context

    def __setattr__(self, attr, val) -> None:
        if self.__initialized and attr in _FROZEN:
            raise ValueError(f"{attr} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    # ------------------------------------------------------------ iteration
    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self.check_worker_number_rationality()
        return _MultiProcessingDataLoaderIter(self)

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def __len__(self) -> int:
        if self._is_iterable:
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)

    def check_worker_number_rationality(self) -> None:
        """Warn when this loader would start more workers than there are CPUs available to it."""
        if self.num_workers <= 0:
            return
        try:
            cpus = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cpus = os.cpu_count() or 1
        if self.num_workers > cpus:
            warnings.warn(
                f"This DataLoader will create {self.num_workers} worker processes in total. Our suggested max "
                f"number of worker in current system is {cpus}, which is smaller than what this DataLoader is "
                "going to create. Please be aware that excessive worker creation might get DataLoader running "
                "slow or even freeze, lower the worker number to avoid potential slowness/freeze if necessary.",
                UserWarning, stacklevel=3)


class _BaseDataLoaderIter:
    def __init__(self, loader: DataLoader) -> None:
        self._dataset = loader.dataset
        self._is_iterable = loader._is_iterable
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._collate_fn = loader.collate_fn
        self._timeout = loader.timeout
        self._pin_memory = False
        if loader.pin_memory:
            self._pin_memory = pinning_available()
            if not self._pin_memory:
                warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device "
                              "pinned memory won't be used.", UserWarning, stacklevel=3)
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = _draw_seed(loader.generator)
        self._num_yielded = 0
        self._loader_ref = weakref.ref(loader)

    def __iter__(self):
        return self

    def __len__(self) -> int:
        return len(self._index_sampler)

    def _reset(self, loader, first_iter: bool = False) -> None:
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0

    def __next__(self):
        if _recorder.current is None:
            data = self._next_data()
        else:  # tensor.profiler: the main side of the fetch as one event
            data = _recorder.current.wrap(self._next_data, f"enumerate(DataLoader)#{type(self).__name__}.__next__",
                                          "dataloader")()
        self._num_yielded += 1
        if self._is_iterable:
            loader = self._loader_ref()
            called = loader._IterableDataset_len_called if loader is not None else None
            if called is not None and self._num_yielded > called:
                warnings.warn(
                    f"Length of IterableDataset {self._dataset} was reported to be {called} (when accessing "
                    f"len(dataloader)), but {self._num_yielded} samples have been fetched. For multiprocessing "
                    "data-loading, this could be caused by not properly configuring the IterableDataset replica "
                    "at each worker (shard it with get_worker_info()).", UserWarning, stacklevel=2)
        return data

    def __getstate__(self):
        raise NotImplementedError(f"{type(self).__name__} cannot be pickled")


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        if self._timeout != 0:  # PyTorch's error type: the loader accepts it, iterating refuses it
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        self._fetcher = _worker._Fetcher(self._dataset, self._is_iterable, self._auto_collation, self._collate_fn,
                                         self._drop_last)

    def _next_data(self):
        index = next(self._sampler_iter)
        data = self._collate_fn(self._fetcher.samples(index))
        if self._pin_memory:
            data = pin_memory(data)
        return data


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._num_workers = loader.num_workers
        self._prefetch = loader.prefetch_factor
        if self._prefetch <= 0:  # nothing would ever be sent: an empty epoch instead of the data
            raise AssertionError("prefetch_factor must be greater than 0 for MultiProcessingDataLoaderIter")
        self._in_order = loader.in_order
        self._persistent = loader.persistent_workers
        self._send_idx = 0
        self._worker_outstanding = [0] * self._num_workers
        self._start_pool(loader)
        self._reset(loader, first_iter=True)

    def _start_pool(self, loader) -> None:
        self._pool = _pool.Pool(loader, self._base_seed, self._is_iterable)
        self._shutdown = weakref.finalize(self, self._pool.shutdown)
        self._worker_outstanding = [0] * self._num_workers

    @property
    def worker_pids(self) -> list[int]:
        """The pids of this iterator's worker processes."""
        return self._pool.pids()

    def _reset(self, loader, first_iter: bool = False) -> None:
        super()._reset(loader, first_iter)
        if not first_iter:
            if self._pool.closed:
                self._start_pool(loader)
            else:
                self._pool.reset()
        self._epoch_start = self._rcvd_idx = self._send_idx
        self._task_info: dict[int, int] = {}
        self._results: dict = {}
        self._tasks_outstanding = 0
        self._active = [True] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        for _ in range(self._prefetch * self._num_workers):
            self._try_put_index()

    def _pick_worker(self) -> int | None:
        fallback = None
        for _ in range(self._num_workers):
            w = next(self._worker_cycle)
            if not self._active[w]:
                continue
            if self._in_order or self._worker_outstanding[w] < self._prefetch:
                return w
            if fallback is None or self._worker_outstanding[w] < self._worker_outstanding[fallback]:
                fallback = w
        return fallback

    def _try_put_index(self) -> None:
        if self._tasks_outstanding >= self._prefetch * self._num_workers:
            return
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        w = self._pick_worker()
        if w is None:
            return
        self._pool.send(w, (self._send_idx, index))
        self._task_info[self._send_idx] = w
        self._worker_outstanding[w] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _end_epoch(self):
        if not self._persistent:
            self._shutdown()
        raise StopIteration

    def _next_data(self):
        while True:
            if self._in_order:
                while self._rcvd_idx < self._send_idx:
                    if self._rcvd_idx in self._results or self._active[self._task_info[self._rcvd_idx]]:
                        break
                    del self._task_info[self._rcvd_idx]
                    self._rcvd_idx += 1
                else:
                    self._end_epoch()
                if self._rcvd_idx in self._results:
                    kind, data = self._results.pop(self._rcvd_idx)
                    del self._task_info[self._rcvd_idx]
                    self._rcvd_idx += 1
                    return self._process(kind, data)
            else:
                if self._results:
                    task_id = next(iter(self._results))
                    kind, data = self._results.pop(task_id)
                    self._task_info.pop(task_id, None)
                    return self._process(kind, data)
                if self._tasks_outstanding == 0:
                    self._end_epoch()
            self._receive()

    def _receive(self) -> None:
        if self._pool.closed:
            raise RuntimeError("DataLoader worker pool was shut down after an earlier error; start a new "
                               "iteration (iter(loader)) to get new workers")
        deadline = None
        if self._timeout > 0:
            import time  # noqa: PLC0415

            deadline = time.monotonic() + self._timeout
        for w, task_id, kind, data in self._pool.receive(deadline, self._timeout):
            self._worker_outstanding[w] -= 1
            if task_id < self._epoch_start:
                continue  # a task of an epoch that was abandoned; its buffer is freed with ``data``
            self._tasks_outstanding -= 1
            if kind == _worker.EXHAUSTED:
                self._active[w] = False
                if not self._in_order:
                    self._task_info.pop(task_id, None)
                self._try_put_index()
                continue
            self._results[task_id] = (kind, data)

    def _process(self, kind, data):
        self._try_put_index()
        if kind == _worker.ERROR:
            data.reraise()
        if self._pin_memory:
            data = pin_memory(data)
        return data
