"""Learning-rate schedulers (our ``torch.optim.lr_scheduler``): every public name of torch's.

Each scheduler computes the learning rates exactly as PyTorch does: recursively from
the current group lr on ``step()``, or in closed form when given an explicit epoch, so
the sequences match PyTorch's to float precision. The base class is in ``_lr_base``; the
schedulers, by kind, in ``_lr_multiplicative`` (factors per epoch), ``_lr_annealing``
(cosine, 1cycle), ``_lr_extra`` (polynomial, warm restarts, cyclic), ``_lr_plateau`` (on
plateau) and ``_lr_sequential`` (sequential, chained). They are defined there and public (and
pickled) from here.
"""

from __future__ import annotations

from ._lr_annealing import CosineAnnealingLR, OneCycleLR
from ._lr_base import LRScheduler
from ._lr_extra import CosineAnnealingWarmRestarts, CyclicLR, PolynomialLR
from ._lr_multiplicative import (
    ConstantLR,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    MultiplicativeLR,
    MultiStepLR,
    StepLR,
)
from ._lr_plateau import ReduceLROnPlateau
from ._lr_sequential import ChainedScheduler, SequentialLR
from .optimizer import Optimizer  # noqa: F401 - importable from here, as from torch's lr_scheduler

__all__ = [
    "LRScheduler",
    "LambdaLR",
    "StepLR",
    "MultiStepLR",
    "ConstantLR",
    "LinearLR",
    "ExponentialLR",
    "SequentialLR",
    "CosineAnnealingLR",
    "OneCycleLR",
    "MultiplicativeLR",
    "PolynomialLR",
    "CosineAnnealingWarmRestarts",
    "CyclicLR",
    "ReduceLROnPlateau",
    "ChainedScheduler",
]

for _name in __all__:  # each defined in a private module; public (and pickled) from here, as torch's
    globals()[_name].__module__ = __name__


class _LRScheduler(LRScheduler):
    """The old name of ``LRScheduler``, still exported (as torch does) for subclasses written for it."""
