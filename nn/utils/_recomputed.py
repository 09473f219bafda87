"""The tensor a forward pre-hook recomputes and stores as a plain module attribute (the legacy
``weight_norm`` / ``spectral_norm`` and pruning), as PyTorch does.

It is a non-leaf that requires grad, which ``pickle`` refuses in general (see
``tensor._conversion.reduce_tensor``). PyTorch pickles such a tensor as a leaf holding its value,
so ``pickle.dumps(model)`` / ``tensor.save(model)`` work for these modules; the hook recomputes
it on the next forward anyway. ``RecomputedTensor`` does that for these attributes only."""

from __future__ import annotations

from tensor import Tensor


class RecomputedTensor(Tensor):
    """A hook's derived tensor; pickled as a leaf with its value and ``requires_grad``."""

    def __reduce_ex__(self, protocol):
        return _rebuild_leaf, (self.detach(), self.requires_grad)


def _rebuild_leaf(data: Tensor, requires_grad: bool) -> Tensor:
    return data.requires_grad_(requires_grad)


def recomputed(value: Tensor) -> RecomputedTensor:
    """``value`` (on the same autograd graph) marked as a hook's derived tensor."""
    return value.as_subclass(RecomputedTensor)
