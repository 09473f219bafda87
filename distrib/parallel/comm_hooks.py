"""Built-in DDP communication hooks (``torch.distributed.algorithms.ddp_comm_hooks.default_hooks``).

A hook is ``hook(state, bucket) -> Future``: it gets a ``GradBucket`` whose ``buffer()`` holds
this rank's gradients and returns a Future whose value is the reduced (averaged) flat tensor.
Register one with ``ddp.register_comm_hook(state, hook)``; ``state`` is passed through (for the
hooks here, the process group to use, or None for the world).

    >>> ddp.register_comm_hook(None, fp16_compress_hook)    # doctest: +SKIP
"""

from __future__ import annotations

import tensor

from .. import collectives
from .. import process_group as _pg
from ..errors import ProcessGroupStateError
from ..work import Future

__all__ = ["allreduce_hook", "fp16_compress_hook", "bf16_compress_hook", "noop_hook"]


def _group(process_group):
    group = process_group if process_group is not None else _pg.world.default_pg
    if group is None:
        raise ProcessGroupStateError("DDP communication hook: the default process group is not initialized")
    return group


def allreduce_hook(process_group, bucket) -> Future:
    """Average the bucket over the group: divide by the group size, then all-reduce (SUM) in place."""
    group = _group(process_group)
    buffer = bucket.buffer()
    buffer.div_(float(group.size()))
    fut = collectives.all_reduce(buffer, group=process_group, async_op=True).get_future()
    return fut.then(lambda f: f.value()[0])


def _compress_hook(dtype, process_group, bucket) -> Future:
    group = _group(process_group)
    buffer = bucket.buffer()
    compressed = buffer.to(dtype)
    compressed.div_(float(group.size()))
    fut = collectives.all_reduce(compressed, group=process_group, async_op=True).get_future()

    def decompress(f):
        # Written into the bucket's own buffer, so DDP needs no extra copy.
        buffer.copy_(f.value()[0])
        return buffer

    return fut.then(decompress)


def fp16_compress_hook(process_group, bucket) -> Future:
    """Cast the bucket to float16, divide by the group size, all-reduce, and cast back:
    half the bytes on the wire, at float16 precision."""
    return _compress_hook(tensor.float16, process_group, bucket)


def bf16_compress_hook(process_group, bucket) -> Future:
    """As ``fp16_compress_hook`` with bfloat16: float32's range, 8 significant bits. CPU
    gradients only (CuPy has no bfloat16 arrays: cuda buckets raise TypeError naming the dtype)."""
    return _compress_hook(tensor.bfloat16, process_group, bucket)


def noop_hook(_state, bucket) -> Future:
    """Skip communication (each rank keeps its own gradients): for measuring, not training."""
    fut = Future()
    fut.set_result(bucket.buffer())
    return fut
