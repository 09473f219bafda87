"""The seam between ``nn`` and ``distrib``: the collectives that ``nn.SyncBatchNorm`` needs.

``nn`` never imports ``distrib`` (it is the layer above). ``distrib`` installs its entry points
here when it is imported (``distrib/_nn_hooks.py``). A model can only be in a process group
after ``distrib`` was imported (``init_process_group``), so until then ``world_size`` says 1
and SyncBatchNorm is a plain BatchNorm, as PyTorch's is without an initialized process group.
"""

from __future__ import annotations

from collections.abc import Callable

from tensor import Tensor


class _DistribApi:
    """``all_reduce_sum(t, group)``: sum ``t`` in place over ``group``; ``world_size(group)``:
    the group's size, 1 when no process group is initialized."""

    all_reduce_sum: Callable[[Tensor, object], None] | None = None

    @staticmethod
    def world_size(group) -> int:
        return 1


api = _DistribApi()
