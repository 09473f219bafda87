"""Process-wide switches of ``torch.*``: determinism, anomaly mode, warn-always, inter-op threads,
denormals, the legacy default tensor type, device modules and memory formats (issue 16, coverage).

Most are flags a ported program sets and reads back; what each changes here is said in its
docstring (Note [Flags without a kernel switch]).

Note [Flags without a kernel switch]
------------------------------------
PyTorch's flags select kernels (deterministic scatter, NaN checks in backward, flush-to-zero
CPU modes). Here the CPU kernels are numpy's, which are deterministic and have no FTZ/DAZ switch,
and there is no inter-op thread pool. The flags below keep PyTorch's values, types and errors so
that programs that set and read them run unchanged; ``set_flush_denormal`` reports False ("not
supported"), as PyTorch does on CPUs without the mode.
"""

from __future__ import annotations

import importlib
import os
import types
import warnings

from . import _dtype, _legacy_types
from ._device import device as _device_cls
from ._device import set_default_device
from ._memory_format import channels_last, channels_last_3d, contiguous_format, memory_format, preserve_format
from ._tensor import Tensor

__all__ = [
    "are_deterministic_algorithms_enabled", "get_deterministic_debug_mode", "get_device_module",
    "get_num_interop_threads", "init_num_threads", "is_anomaly_check_nan_enabled", "is_anomaly_enabled",
    "is_deterministic_algorithms_warn_only_enabled", "is_distributed", "is_warn_always_enabled",
    "memory_format", "channels_last", "channels_last_3d", "contiguous_format", "preserve_format",
    "set_anomaly_enabled", "set_default_tensor_type", "set_deterministic_debug_mode", "set_flush_denormal",
    "set_num_interop_threads", "set_warn_always", "thread_safe_generator", "use_deterministic_algorithms",
]  # fmt: skip


class _Flags:
    deterministic = False
    deterministic_warn_only = False
    anomaly = False
    anomaly_check_nan = True
    warn_always = False
    interop_threads = os.cpu_count() or 1


_flags = _Flags()
_DEBUG_MODES = ("default", "warn", "error")


def _check_bool(value, what: str, error: type = TypeError) -> None:
    if not isinstance(value, bool):
        raise error(f"{what} expects a bool, but got {type(value).__name__}")


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Ask for deterministic algorithms (``torch.use_deterministic_algorithms``).

    Every kernel here is deterministic on the CPU; the flag is kept for
    ``are_deterministic_algorithms_enabled`` and the debug mode (Note [Flags without a kernel switch]).

    Raises:
        TypeError: if ``mode`` or ``warn_only`` is not a bool.
    """
    _check_bool(mode, "use_deterministic_algorithms(): mode")
    _check_bool(warn_only, "use_deterministic_algorithms(): warn_only")
    _flags.deterministic, _flags.deterministic_warn_only = mode, warn_only


def are_deterministic_algorithms_enabled() -> bool:
    """True after ``use_deterministic_algorithms(True)``."""
    return _flags.deterministic


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """True after ``use_deterministic_algorithms(True, warn_only=True)``."""
    return _flags.deterministic_warn_only


def set_deterministic_debug_mode(debug_mode: int | str) -> None:
    """``"default"``/0: off; ``"warn"``/1: deterministic, warn only; ``"error"``/2: deterministic.

    Raises:
        TypeError: if ``debug_mode`` is neither a str nor an int.
        RuntimeError: for a name or number outside those three.
    """
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(
                f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got {debug_mode}"
            )
        debug_mode = _DEBUG_MODES.index(debug_mode)
    elif not isinstance(debug_mode, int) or isinstance(debug_mode, bool):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    """0, 1 or 2, as set by ``set_deterministic_debug_mode`` or ``use_deterministic_algorithms``."""
    if not _flags.deterministic:
        return 0
    return 1 if _flags.deterministic_warn_only else 2


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Set the anomaly-mode flags (``torch.set_anomaly_enabled``); read back by ``is_anomaly_enabled``
    and ``is_anomaly_check_nan_enabled``. With both on, backward raises on a NaN gradient
    (``autograd.detect_anomaly``).

    Raises:
        TypeError: if ``enabled`` or ``check_nan`` is not a bool.
    """
    _check_bool(enabled, "set_anomaly_enabled(): enabled")
    _check_bool(check_nan, "set_anomaly_enabled(): check_nan")
    _flags.anomaly, _flags.anomaly_check_nan = enabled, check_nan if enabled else True


def is_anomaly_enabled() -> bool:
    """True after ``set_anomaly_enabled(True)``."""
    return _flags.anomaly


def is_anomaly_check_nan_enabled() -> bool:
    """The ``check_nan`` of the last ``set_anomaly_enabled`` (True when anomaly mode is off)."""
    return _flags.anomaly_check_nan


def set_warn_always(b: bool, /) -> None:
    """Make warnings PyTorch gives once per process be given every time (``torch.set_warn_always``).

    Raises:
        RuntimeError: if ``b`` is not a bool (PyTorch's type).
    """
    _check_bool(b, "setWarnOnlyOnce", RuntimeError)
    _flags.warn_always = b


def is_warn_always_enabled() -> bool:
    """True after ``set_warn_always(True)``."""
    return _flags.warn_always


def get_num_interop_threads() -> int:
    """The number of inter-op threads (the CPU count unless set). There is no inter-op pool
    here: ops run in the caller's thread, split across ``get_num_threads()`` intra-op threads."""
    return _flags.interop_threads


def set_num_interop_threads(num: int) -> None:
    """Set the number ``get_num_interop_threads`` reports (no pool uses it here).

    Raises:
        RuntimeError: if ``num`` is not a positive int.
    """
    if not isinstance(num, int) or isinstance(num, bool) or num <= 0:
        raise RuntimeError(f"set_num_interop_threads expects a positive integer, got {num!r}")
    _flags.interop_threads = num


def init_num_threads() -> None:
    """Initialise the intra-op thread settings of this thread (``torch.init_num_threads``): a no-op
    here, where the thread count is process-wide (``set_num_threads``)."""


def set_flush_denormal(mode: bool) -> bool:
    """Flush denormal floats to zero on the CPU, if supported; returns whether it was set.

    numpy has no flush-to-zero switch, so this returns False and changes nothing (PyTorch's
    answer on CPUs without the mode).

    Raises:
        RuntimeError: if ``mode`` is not a bool.
    """
    _check_bool(mode, "flush_denormal", RuntimeError)
    return False


def set_default_tensor_type(t, /) -> None:
    """Deprecated PyTorch spelling of ``set_default_dtype`` (and ``set_default_device``):
    ``tensor.DoubleTensor``, ``"torch.FloatTensor"``, ``"torch.cuda.HalfTensor"``...

    Warns:
        UserWarning: always: the function is deprecated, as in PyTorch.

    Raises:
        TypeError: for a non-floating type or something that is not a tensor type.
    """
    name = t if isinstance(t, str) else getattr(t, "__name__", None)
    dtype = getattr(t, "dtype", None) if isinstance(t, type) else None
    device = "cpu"
    if isinstance(t, str):
        prefix, _, name = t.rpartition(".")
        device = "cuda" if prefix.endswith(".cuda") else "cpu"
        if prefix not in ("torch", "tensor", "torch.cuda", "tensor.cuda"):
            raise TypeError(f"invalid type: {t!r} (expected e.g. 'torch.FloatTensor')")
        dtype = {cls: dt for dt, cls in _legacy_types._CLASS_NAMES.items()}.get(name)
        dtype = None if dtype is None else _dtype._by_name(dtype)
    if not isinstance(dtype, _dtype.dtype) or not dtype.is_floating_point:
        raise TypeError(
            f"invalid type object {name or t!r}: only floating-point types are supported as the default type"
        )
    warnings.warn(
        "tensor.set_default_tensor_type() is deprecated (as in PyTorch 2.1); use tensor.set_default_dtype() and "
        "tensor.set_default_device() instead.",
        UserWarning,
        stacklevel=2,
    )
    _dtype.set_default_dtype(dtype)
    set_default_device(device)


def is_distributed(input) -> bool:
    """False: a tensor here is never a distributed (legacy THD) tensor.

    Raises:
        TypeError: if ``input`` is not a Tensor.
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"is_distributed(): argument 'input' must be Tensor, not {type(input).__name__}")
    return False


def get_device_module(device: _device_cls | str | None = None) -> types.ModuleType:
    """``tensor.cuda`` or ``tensor.cpu`` for ``device`` (its type); None: the current accelerator's
    module, else ``tensor.cpu``.

    Raises:
        RuntimeError: for a device string that names no device type, or another kind of value.
    """
    if device is None:
        from . import accelerator  # noqa: PLC0415 - accelerator imports cuda, which is heavier

        device = accelerator.current_accelerator() or "cpu"
    elif not isinstance(device, (str, _device_cls)):
        raise RuntimeError(f"Invalid value of device '{device}', expect tensor.device, str, or None")
    return importlib.import_module(f"tensor.{_device_cls(device).type}")


def thread_safe_generator():
    """The generator of the current DataLoader thread worker, or None outside one (then random
    ops use the default generator). DataLoader workers here are processes, so this is None."""
    return None
