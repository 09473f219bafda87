"""``ShardedTensor``: one rank's piece of a tensor sharded flat across ranks, and flattening of
nested state dicts into ``"a.b.c"`` keys."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tensor import Tensor

__all__ = ["ShardedTensor", "flatten"]


@dataclass
class ShardedTensor:
    """Elements ``[offset, offset + local.numel())`` of the flattened tensor of ``global_shape``
    (elements past its end are padding). ``local`` is this rank's tensor itself, not a copy, so
    ``distrib.checkpoint.load`` fills it in place."""

    local: Tensor
    global_shape: tuple
    offset: int

    def numel(self) -> int:
        """The number of elements of the whole tensor."""
        n = 1
        for size in self.global_shape:
            n *= size
        return n

    def valid_length(self) -> int:
        """How many of ``local``'s elements belong to the tensor (the rest is padding)."""
        return max(0, min(self.local.numel(), self.numel() - self.offset))


def flatten(state_dict: dict, prefix: str = "", with_parents: bool = False) -> dict[str, Any]:
    """``{"a.b": leaf}`` for the leaves of nested dicts (``(parent dict, key, leaf)`` with
    ``with_parents``); any value that is not a dict is a leaf."""
    flat: dict[str, Any] = {}
    for name, value in state_dict.items():
        key = f"{prefix}{name}"
        if isinstance(value, dict) and value:
            flat.update(flatten(value, key + ".", with_parents))
        else:
            flat[key] = (state_dict, name, value) if with_parents else value
    return flat
