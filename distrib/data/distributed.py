"""``distrib.data.distributed``: where ``torch.utils.data.distributed`` keeps ``DistributedSampler``,
so ``from torch.utils.data.distributed import DistributedSampler`` ports by changing the package."""

from .sampler import DistributedSampler

__all__ = ["DistributedSampler"]
