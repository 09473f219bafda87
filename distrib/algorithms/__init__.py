"""``distrib.algorithms``: ``Join`` for uneven inputs, and the DDP communication hooks
(``distrib.algorithms.ddp_comm_hooks.default_hooks``), as ``torch.distributed.algorithms``."""

from . import ddp_comm_hooks
from .join import Join, Joinable, JoinHook

__all__ = ["Join", "Joinable", "JoinHook", "ddp_comm_hooks"]
