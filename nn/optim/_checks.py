"""Option checks shared by the optimizers, with ``torch.optim``'s messages."""

from __future__ import annotations

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
        ValueError: "Invalid learning rate: -1" (and so on), naming the first negative one.
    """
    for name, value in options.items():
        if not 0.0 <= value:
            raise ValueError(f"Invalid {_LABELS.get(name, name + ' value')}: {value}")


def check_betas(betas: tuple[float, float]) -> None:
    """Raise unless both betas are in ``[0, 1)``.

    Raises:
        ValueError: "Invalid beta parameter at index i: ...".
    """
    for index, beta in enumerate(betas):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"Invalid beta parameter at index {index}: {beta}")
