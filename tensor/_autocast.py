"""``tensor.autocast``: mixed precision by op lists, applied where the dispatcher runs an op.

Note [Autocast at the dispatcher]
While any autocast region is open, ``tensor/_dispatch.py`` hands every op's tensor inputs to
``_cast_inputs`` (one ``is not None`` test per op otherwise, as for the profiler). An op's policy is
looked up by its op-table name in the lists below, per device type, as PyTorch keys its lists by
the autocast dispatch key of the device:

* ``lower``: floating inputs (except float64) are cast to the region's dtype (bfloat16 on the cpu
  by default, float16 on cuda): GEMMs, where the low precision pays.
* ``fp32``: floating inputs in a lower precision are cast to float32: ops whose range or accuracy
  float16/bfloat16 would ruin (exp, log, sums, softmax, losses, decompositions).
* ``promote``: floating inputs are cast to the widest floating dtype among them.

Our ops are primitives, so ``conv2d`` is covered through the GEMM its im2col runs (``matmul``)
and ``F.linear`` through ``linear``; a composite whose own name is on PyTorch's list but whose
primitives are not (``cross_entropy`` on the cpu list) is covered through its parts
(``nll_loss``). A conv's bias is added after its GEMM, cast to the GEMM's dtype
(``nn/functional/conv.py``), so a conv with a bias returns the region's dtype, as PyTorch's. On a
device without low-precision GEMMs (the CPU) a convolution instead rounds its input, weight and
bias to the region's dtype itself and runs its GEMM in float32 with autocast off, rounding the
result once (Note [Autocast convolution] in nn/functional/conv.py): the same values, fewer casts.

Casts are ordinary ``to_dtype`` ops, recorded by autograd: gradients reach float32 master weights
in float32. With ``cache_enabled`` the cast of a float32 leaf that requires grad (a weight) is
made once per outermost region, as in PyTorch.
"""

from __future__ import annotations

import functools
import threading

from . import _dispatch, _dtype

__all__ = [
    "autocast",
    "is_autocast_enabled",
    "get_autocast_dtype",
    "POLICIES",
    "set_autocast_enabled",
    "set_autocast_dtype",
    "is_autocast_cpu_enabled",
    "set_autocast_cpu_enabled",
    "get_autocast_cpu_dtype",
    "get_autocast_gpu_dtype",
    "set_autocast_cpu_dtype",
    "set_autocast_gpu_dtype",
    "is_autocast_cache_enabled",
    "set_autocast_cache_enabled",
    "clear_autocast_cache",
    "autocast_increment_nesting",
    "autocast_decrement_nesting",
]

_SHARED_FP32 = ("prod", "nll_loss")
POLICIES: dict[str, dict[str, str]] = {
    # PyTorch's CPU lists (aten/src/ATen/autocast_mode.cpp), restricted to our primitive ops
    "cpu": {
        **dict.fromkeys(("matmul", "linear"), "lower"),
        **dict.fromkeys(
            (*_SHARED_FP32, "inv", "solve", "cholesky", "svd", "qr", "eigh", "eig", "fft_c2c", "fft_r2c", "fft_c2r"),
            "fp32",
        ),
        **dict.fromkeys(("cat", "index_put"), "promote"),
    },
    # PyTorch's CUDA lists
    "cuda": {
        **dict.fromkeys(("matmul", "linear", "einsum", "lstm_cell", "gru_cell"), "lower"),
        **dict.fromkeys(
            (
                *_SHARED_FP32,
                "acos",
                "asin",
                "cosh",
                "erfinv",
                "exp",
                "expm1",
                "log",
                "log10",
                "log2",
                "log1p",
                "reciprocal",
                "rsqrt",
                "sinh",
                "tan",
                "pow",
                "softmax",
                "log_softmax",
                "sum",
                "cumsum",
                "cumprod",
                "vector_norm",
            ),
            "fp32",
        ),
        **dict.fromkeys(("cat", "index_put", "atan2"), "promote"),
    },
}
_DEFAULT_DTYPES = {"cpu": _dtype.bfloat16, "cuda": _dtype.float16}
_LOWER_OK = {"cpu": (_dtype.bfloat16, _dtype.float16), "cuda": (_dtype.float16,)}


class _State(threading.local):
    """The thread's autocast settings (PyTorch keeps them per thread too)."""

    def __init__(self) -> None:
        self.enabled = {"cpu": False, "cuda": False}
        self.dtype = dict(_DEFAULT_DTYPES)
        self.cache_enabled = True
        self.depth = 0  # open regions in this thread; the cast cache lives until the outermost exits
        self.cache: dict[int, tuple] = {}
        self.hooked = False  # whether set_autocast_enabled turned autocast on outside a region


_state = _State()
_open_regions = [0]  # across threads: the dispatcher hook is installed while any is open
_lock = threading.Lock()


def _check_device_type(device_type: str) -> str:
    if device_type not in POLICIES:
        raise RuntimeError(
            f"User specified an unsupported autocast device_type '{device_type}'; "
            f"supported device types are {', '.join(POLICIES)}"
        )
    return device_type


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    """Whether autocast is on for ``device_type`` in this thread (``cuda`` when not given, as PyTorch).

    Raises:
        RuntimeError: for a device type other than ``cpu`` or ``cuda``.
    """
    return _state.enabled[_check_device_type(device_type)]


def get_autocast_dtype(device_type: str) -> _dtype.dtype:
    """The lower-precision dtype autocast uses on ``device_type`` in this thread (default:
    ``bfloat16`` on the cpu, ``float16`` on cuda).

    Raises:
        RuntimeError: for a device type other than ``cpu`` or ``cuda``.
    """
    return _state.dtype[_check_device_type(device_type)]


def _check_dtype(device_type: str, dtype: _dtype.dtype) -> _dtype.dtype:
    if dtype not in _LOWER_OK[device_type]:
        supported = " and ".join(d.name for d in _LOWER_OK[device_type])
        why = " (CuPy has no bfloat16 arrays)" if device_type == "cuda" and dtype is _dtype.bfloat16 else ""
        raise TypeError(f"autocast on {device_type} supports {supported}, got {dtype.name}{why}")
    return dtype


def _install(delta: int) -> None:
    with _lock:
        _open_regions[0] += delta
        _dispatch.autocast = _cast_inputs if _open_regions[0] > 0 else None


class autocast:  # noqa: N801 - PyTorch's name
    """Run ops on ``device_type`` in mixed precision: GEMMs in ``dtype``, precision-sensitive ops
    in float32 (Note [Autocast at the dispatcher] in tensor/_autocast.py). A context manager and
    a decorator, as ``torch.autocast``::

        >>> import tensor
        >>> w = tensor.ones(3, 3, requires_grad=True)
        >>> with tensor.autocast("cpu"):
        ...     y = tensor.ones(2, 3) @ w
        >>> y.dtype
        tensor.bfloat16

    Raises:
        RuntimeError: for a device type other than ``cpu`` or ``cuda``.
        TypeError: for a dtype autocast does not support there (``cpu``: bfloat16, float16;
            ``cuda``: float16, since CuPy has no bfloat16).
    """

    def __init__(
        self,
        device_type: str,
        dtype: _dtype.dtype | None = None,
        enabled: bool = True,
        cache_enabled: bool | None = None,
    ) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device_type = _check_device_type(device_type)
        self.fast_dtype = (
            _DEFAULT_DTYPES[device_type] if dtype is None else _check_dtype(device_type, _dtype.as_dtype(dtype))
        )
        self._enabled = bool(enabled)
        self._cache_enabled = True if cache_enabled is None else bool(cache_enabled)
        self._saved: list[tuple] = []

    def __enter__(self) -> autocast:
        state = _state
        self._saved.append((state.enabled[self.device_type], state.dtype[self.device_type], state.cache_enabled))
        state.enabled[self.device_type] = self._enabled
        state.dtype[self.device_type] = self.fast_dtype
        state.cache_enabled = self._cache_enabled
        state.depth += 1
        _install(+1)
        return self

    def __exit__(self, *exc) -> None:
        state = _state
        enabled, dtype, cache_enabled = self._saved.pop()
        state.enabled[self.device_type], state.dtype[self.device_type] = enabled, dtype
        state.cache_enabled = cache_enabled
        state.depth -= 1
        if state.depth == 0:
            state.cache.clear()
        _install(-1)

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with autocast(self.device_type, self.fast_dtype, self._enabled, self._cache_enabled):
                return fn(*args, **kwargs)

        return wrapper


def will_cast(op_name: str, t) -> bool:
    """Whether an open autocast region will cast the inputs of op ``op_name`` on ``t``'s device:
    the ops' front ends skip their same-dtype checks then, as PyTorch checks after autocast."""
    return _state.enabled.get(t._device.type, False) and op_name in POLICIES[t._device.type]


def _cast_inputs(op, inputs):
    """The dispatcher hook: ``inputs`` cast by ``op``'s policy on their device type."""
    state = _state
    first = inputs[0]
    device_type = first._device.type
    if not state.enabled.get(device_type):
        return inputs
    policy = POLICIES[device_type].get(op.name)
    if policy is None:
        return inputs
    if policy == "lower":
        target = state.dtype[device_type]
    elif policy == "fp32":
        target = _dtype.float32
    else:
        target = _widest(inputs)
    return tuple(_cast(t, target, policy, state) for t in inputs)


def _eligible(t) -> bool:
    return _dispatch.is_tensor(t) and t.dtype.is_floating_point and t.dtype is not _dtype.float64


def _widest(inputs) -> _dtype.dtype | None:
    widest = None
    for t in inputs:
        if _dispatch.is_tensor(t) and t.dtype.is_floating_point:
            widest = t.dtype if widest is None else _dtype.promote_types(widest, t.dtype)
    return widest


def _to(t, target):
    # ``t.to(target)`` without parsing ``to``'s arguments: a recorded ``to_dtype`` op.
    from ._conversion import _to_dtype  # noqa: PLC0415 - _conversion imports the dispatcher

    return _dispatch.apply_unary(_to_dtype, t, (target.numpy, t.dtype))


def _cast(t, target, policy, state):
    if not _eligible(t) or t.dtype is target or target is None:
        return t
    if policy == "fp32" and t.dtype is _dtype.float32:
        return t
    cacheable = (
        state.cache_enabled
        and policy == "lower"
        and t.dtype is _dtype.float32
        and t._requires_grad
        and t._grad_fn is None
        and t._base is None
    )
    if not cacheable:
        return _to(t, target)
    hit = state.cache.get(id(t))
    if hit is not None and hit[0] is t and hit[1].dtype is target:
        return hit[1]
    cast = _to(t, target)
    state.cache[id(t)] = (t, cast)  # holds t: its id cannot be reused while the entry lives
    return cast


# ---------------------------------------------------------------- torch's legacy spellings
# ``torch.set_autocast_enabled`` and friends set the thread's state directly, outside any region
# (the ``autocast`` context manager is built on them in PyTorch).


def set_autocast_enabled(device_type: str | bool, enabled: bool | None = None) -> None:
    """Turn autocast on or off for ``device_type`` in this thread, as ``torch.set_autocast_enabled``
    (``set_autocast_enabled(enabled)`` alone means ``cuda``, PyTorch's legacy form).

    Raises:
        RuntimeError: for a device type other than ``cpu`` or ``cuda``.
    """
    if enabled is None:
        device_type, enabled = "cuda", device_type
    state = _state
    state.enabled[_check_device_type(device_type)] = bool(enabled)
    on = any(state.enabled.values())
    if on != state.hooked:  # keep the dispatcher hook installed while this thread has autocast on
        state.hooked = on
        _install(+1 if on else -1)


def set_autocast_dtype(device_type: str, dtype: _dtype.dtype) -> None:
    """Set the lower-precision dtype autocast uses on ``device_type`` in this thread.

    Raises:
        RuntimeError: for a device type other than ``cpu`` or ``cuda``.
        TypeError: for a dtype autocast does not support there.
    """
    _check_device_type(device_type)
    _state.dtype[device_type] = _check_dtype(device_type, _dtype.as_dtype(dtype))


def is_autocast_cpu_enabled() -> bool:
    """``is_autocast_enabled("cpu")`` (PyTorch's legacy spelling)."""
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    """``set_autocast_enabled("cpu", enabled)`` (PyTorch's legacy spelling)."""
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype() -> _dtype.dtype:
    """``get_autocast_dtype("cpu")`` (PyTorch's legacy spelling)."""
    return get_autocast_dtype("cpu")


def get_autocast_gpu_dtype() -> _dtype.dtype:
    """``get_autocast_dtype("cuda")`` (PyTorch's legacy spelling)."""
    return get_autocast_dtype("cuda")


def set_autocast_cpu_dtype(dtype: _dtype.dtype) -> None:
    """``set_autocast_dtype("cpu", dtype)`` (PyTorch's legacy spelling). Raises like it."""
    set_autocast_dtype("cpu", dtype)


def set_autocast_gpu_dtype(dtype: _dtype.dtype) -> None:
    """``set_autocast_dtype("cuda", dtype)`` (PyTorch's legacy spelling). Raises like it."""
    set_autocast_dtype("cuda", dtype)


def is_autocast_cache_enabled() -> bool:
    """Whether autocast caches the casts of weights (float32 leaves that require grad)."""
    return _state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Turn the cast cache on or off in this thread."""
    _state.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    """Drop the cached casts (the ``autocast`` region does this when the outermost one exits)."""
    _state.cache.clear()


def autocast_increment_nesting() -> int:
    """Count one more open autocast region in this thread; returns the new depth."""
    _state.depth += 1
    return _state.depth


def autocast_decrement_nesting() -> int:
    """Count one autocast region fewer in this thread; returns the new depth (PyTorch's callers
    clear the cache when it reaches 0)."""
    _state.depth -= 1
    return _state.depth
