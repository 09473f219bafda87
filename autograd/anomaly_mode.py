"""``autograd.detect_anomaly`` and ``autograd.set_detect_anomaly``, as torch.autograd's (issue 16).

They set the anomaly-mode flags of ``tensor`` (``tensor.is_anomaly_enabled``,
``tensor.is_anomaly_check_nan_enabled``), so ported programs that turn anomaly detection on run
unchanged. This engine makes no anomaly checks: it neither records forward stack traces nor looks
for NaN in gradients, and says so when the mode is switched on (Note [Flags without a kernel
switch] in tensor/_runtime_flags.py).
"""

from __future__ import annotations

import warnings

import tensor

__all__ = ["detect_anomaly", "set_detect_anomaly"]

_NO_CHECKS = (
    "Anomaly mode is on, but this autograd engine makes no anomaly checks (no forward traces, no NaN "
    "checks in backward): the flag is only recorded (tensor.is_anomaly_enabled())."
)


class set_detect_anomaly:  # noqa: N801 - PyTorch's name
    """Turn anomaly mode on or off now; as a context manager, restore the previous mode on exit.

    Warns:
        UserWarning: when the mode is turned on (no checks are made here).
    """

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.previous = (tensor.is_anomaly_enabled(), tensor.is_anomaly_check_nan_enabled())
        if mode:
            warnings.warn(_NO_CHECKS, UserWarning, stacklevel=2)
        tensor.set_anomaly_enabled(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        tensor.set_anomaly_enabled(*self.previous)


class detect_anomaly:  # noqa: N801 - PyTorch's name
    """A context manager that turns anomaly mode on inside it.

    Warns:
        UserWarning: on entry (no checks are made here).
    """

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan
        self.previous = (False, True)

    def __enter__(self) -> None:
        self.previous = (tensor.is_anomaly_enabled(), tensor.is_anomaly_check_nan_enabled())
        warnings.warn(_NO_CHECKS, UserWarning, stacklevel=2)
        tensor.set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *exc) -> None:
        tensor.set_anomaly_enabled(*self.previous)
