"""``distrib.parallel``: ``DistributedDataParallel`` (our ``torch.nn.parallel``), its gradient
buckets (``reducer``) and the built-in communication hooks (``comm_hooks``)."""

from . import comm_hooks
from .distributed import DistributedDataParallel
from .reducer import GradBucket

__all__ = ["DistributedDataParallel", "GradBucket", "comm_hooks"]
