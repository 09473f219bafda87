"""DDP communication hooks, where PyTorch keeps them: ``ddp_comm_hooks.default_hooks.allreduce_hook``
and ``fp16_compress_hook`` (defined in ``distrib.parallel.comm_hooks``)."""

from . import default_hooks

__all__ = ["default_hooks"]
