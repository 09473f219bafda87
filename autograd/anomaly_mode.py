"""``autograd.detect_anomaly`` and ``autograd.set_detect_anomaly``, as torch.autograd's (issue 16).

They set the anomaly-mode flags of ``tensor`` (``tensor.is_anomaly_enabled``,
``tensor.is_anomaly_check_nan_enabled``). With both on, the engine checks every gradient a
node's derivative returns and raises PyTorch's ``RuntimeError: Function 'MulBackward0' returned
nan values in its 0th output.`` (``autograd/engine.py``). Unlike PyTorch, no forward stack
trace is recorded per op: the error names the op's backward, not the forward line.
"""

from __future__ import annotations

import warnings

import tensor

__all__ = ["detect_anomaly", "set_detect_anomaly"]

_ENABLED = (
    "Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
    "enabled for debugging (gradients are checked for NaN; no forward traces are recorded)."
)


class set_detect_anomaly:  # noqa: N801 - PyTorch's name
    """Turn anomaly mode on or off now; as a context manager, restore the previous mode on exit.

    Warns:
        UserWarning: when the mode is turned on, as PyTorch does.
    """

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.previous = (tensor.is_anomaly_enabled(), tensor.is_anomaly_check_nan_enabled())
        if mode:
            warnings.warn(_ENABLED, UserWarning, stacklevel=2)
        tensor.set_anomaly_enabled(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        tensor.set_anomaly_enabled(*self.previous)


class detect_anomaly:  # noqa: N801 - PyTorch's name
    """A context manager that turns anomaly mode on inside it.

    Warns:
        UserWarning: on entry, as PyTorch does.
    """

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan
        self.previous = (False, True)

    def __enter__(self) -> None:
        self.previous = (tensor.is_anomaly_enabled(), tensor.is_anomaly_check_nan_enabled())
        warnings.warn(_ENABLED, UserWarning, stacklevel=2)
        tensor.set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *exc) -> None:
        tensor.set_anomaly_enabled(*self.previous)
