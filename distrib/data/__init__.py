"""``distrib.data``: datasets, samplers, collation and the DataLoader. Our ``torch.utils.data``.

    >>> import tensor
    >>> from distrib.data import DataLoader, TensorDataset
    >>> ds = TensorDataset(tensor.randn(100, 3), tensor.arange(100))
    >>> for x, y in DataLoader(ds, batch_size=32, shuffle=True, num_workers=2):
    ...     pass

With ``num_workers > 0`` batches are made in worker processes, collated straight into reused
shared memory; see ``dataloader.py`` for the semantics and ``_channel.py`` for the transport.
"""

from __future__ import annotations

from . import distributed  # noqa: F401 - torch.utils.data.distributed, reachable as an attribute
from ._pin_memory import pin_memory
from ._worker import WorkerInfo, get_worker_info
from .collate import default_collate, default_convert
from .dataloader import DataLoader
from .dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .sampler import (
    BatchSampler,
    DistributedSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "DistributedSampler",
    "IterableDataset", "RandomSampler", "Sampler", "SequentialSampler", "StackDataset", "Subset",
    "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler", "WorkerInfo", "default_collate",
    "default_convert", "get_worker_info", "pin_memory", "random_split",
]
