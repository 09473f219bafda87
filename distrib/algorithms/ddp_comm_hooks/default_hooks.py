"""The built-in DDP communication hooks (``torch.distributed.algorithms.ddp_comm_hooks.default_hooks``)."""

from ...parallel.comm_hooks import allreduce_hook, bf16_compress_hook, fp16_compress_hook, noop_hook

__all__ = ["allreduce_hook", "fp16_compress_hook", "bf16_compress_hook", "noop_hook"]
