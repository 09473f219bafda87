"""``SparseAdam``: Adam for sparse gradients (of which there are none here)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._checks import check_betas
from .optimizer import Optimizer, ParamsT

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """``torch.optim.SparseAdam``'s constructor and checks. Every gradient here is dense (there
    are no sparse tensors; ``nn.Embedding(sparse=True)`` produces a dense gradient), and PyTorch's
    SparseAdam refuses dense gradients, so ``step`` raises as PyTorch's does: use ``Adam``.

    Raises:
        ValueError: "Invalid learning rate/epsilon value: ..." unless positive, or for a beta
            outside ``[0, 1)``.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        maximize: bool = False,
    ) -> None:
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        check_betas(betas)
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps, "maximize": maximize})

    def step(self, closure: Callable[[], Any] | None = None):
        """Raises for any parameter with a gradient, as PyTorch does for dense gradients.

        Raises:
            RuntimeError: "SparseAdam does not support dense gradients, please consider Adam instead".
        """
        loss = self._run_closure(closure)
        for group in self.param_groups:
            for _ in self._params_with_grad(group):
                raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
        return loss
