"""Options shared by the optimizers: the ``required`` marker of an option every parameter group
must set, and checks with ``torch.optim``'s messages."""

from __future__ import annotations

from tensor import Tensor


class _RequiredParameter:
    """Singleton marking an option that every parameter group must set."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


_LABELS = {
    "lr": "learning rate",
    "eps": "epsilon value",
    "weight_decay": "weight_decay value",
    "momentum_decay": "momentum_decay value",
    "lr_decay": "lr_decay value",
}


def check_nonnegative(**options: float) -> None:
    """Raise for a negative option (``lr=...``, ``eps=...``, ``weight_decay=...``...).

    Raises:
        ValueError: "Invalid learning rate: -1" (and so on), naming the first negative one; or
            "Tensor lr must be 1-element" for a tensor option with several elements.
    """
    for name, value in options.items():
        if isinstance(value, Tensor) and value.numel() != 1:
            raise ValueError(f"Tensor {name} must be 1-element")
        if not 0.0 <= value:
            raise ValueError(f"Invalid {_LABELS.get(name, name + ' value')}: {value}")


def torch_flags(differentiable: bool, **accepted) -> dict:
    """Param-group entries for torch's options that change nothing here: ``capturable`` (for CUDA
    graphs, which there are none of: steps run as usual) and, where an optimizer has no fused step,
    ``fused``; and ``differentiable``, which must be False.

    Raises:
        NotImplementedError: for ``differentiable=True`` (a step that autograd differentiates).
    """
    if differentiable:
        raise NotImplementedError("differentiable=True is not supported: optimizer steps update the parameters "
                                  "outside autograd")
    return {**accepted, "differentiable": False}


def check_betas(betas: tuple[float, float]) -> None:
    """Raise unless both betas are in ``[0, 1)``.

    Raises:
        ValueError: "Invalid beta parameter at index i: ..." or "Tensor betas[i] must be 1-element".
    """
    for index, beta in enumerate(betas):
        if isinstance(beta, Tensor) and beta.numel() != 1:
            raise ValueError(f"Tensor betas[{index}] must be 1-element")
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"Invalid beta parameter at index {index}: {beta}")
