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

The lists name primitives (``matmul``, ``linear``, ``nll_loss``) and composite front ends by
PyTorch's op names. PyTorch casts where its op is called and runs the op's body with autocast
off, so a composite that PyTorch runs as one op is decorated with ``as_op(name)``: its tensor
arguments are cast by ``name``'s policy and its primitives see no autocast. That also keeps
composites PyTorch does not list (``dot``, ``mv``, ``interpolate``, ``matrix_exp``) in their
input dtype, where the ``matmul`` they run would otherwise round to bfloat16. ``conv2d`` is
covered through the GEMM its im2col runs (``matmul``). A conv's bias is added after its GEMM, cast to the GEMM's dtype
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
import warnings

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

# PyTorch's loss functions, on its fp32 lists of both devices.
_LOSSES = (
    "nll_loss", "cross_entropy_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div",
    "poisson_nll_loss", "cosine_embedding_loss", "hinge_embedding_loss", "margin_ranking_loss",
    "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss", "multilabel_margin_loss",
    "binary_cross_entropy_with_logits",
)
_FFT = ("fft_c2c", "fft_r2c", "fft_c2r")
POLICIES: dict[str, dict[str, str]] = {
    # PyTorch's CPU lists (aten/src/ATen/autocast_mode.cpp)
    "cpu": {
        **dict.fromkeys(
            ("matmul", "linear", "addmm", "addbmm", "baddbmm", "linalg_vecdot", "prelu", "lstm_layer",
             "lstm_proj_layer"),
            "lower",
        ),
        **dict.fromkeys(
            (
                *_LOSSES, *_FFT, "prod", "binary_cross_entropy", "ctc_loss",
                "avg_pool3d", "max_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d", "max_unpool2d",
                "max_unpool3d", "fractional_max_pool2d", "fractional_max_pool3d", "reflection_pad1d",
                "reflection_pad2d", "replication_pad1d", "replication_pad2d", "replication_pad3d",
                "grid_sampler", "polar", "quantile", "nanquantile", "stft", "cdist", "trace", "view_as_complex",
                # linear algebra: the primitives, then the front ends
                "inv", "solve", "cholesky", "svd", "qr", "eigh", "eig", "geqrf",
                "cholesky_inverse", "cholesky_solve", "inverse", "lu_solve", "orgqr", "ormqr", "pinverse",
                "triangular_solve", "linalg_cond", "linalg_matrix_rank", "linalg_solve", "linalg_cholesky",
                "linalg_cholesky_ex", "linalg_svdvals", "linalg_eigvals", "linalg_eigvalsh", "linalg_inv",
                "linalg_inv_ex", "linalg_householder_product", "linalg_tensorinv", "linalg_tensorsolve",
                "linalg_qr", "linalg_svd", "linalg_eig", "linalg_eigh", "linalg_lstsq",
            ),
            "fp32",
        ),
        # index_put is not on PyTorch's list (it raises for mixed dtypes): promoting gives the right numbers
        **dict.fromkeys(("cat", "stack", "index_copy", "index_put"), "promote"),
    },
    # PyTorch's CUDA lists
    "cuda": {
        **dict.fromkeys(
            ("matmul", "linear", "addmm", "addbmm", "baddbmm", "einsum", "prelu", "lstm_cell", "gru_cell"),
            "lower",
        ),
        **dict.fromkeys(
            (
                *_LOSSES,
                "prod",
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
        **dict.fromkeys(("cat", "stack", "index_copy", "index_put", "atan2"), "promote"),
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


def _supported(device_type: str, dtype: _dtype.dtype) -> bool:
    """Whether autocast can run on ``device_type`` in ``dtype``; warns as PyTorch does when it cannot
    (``autocast`` is then disabled). bfloat16 on cuda raises instead: PyTorch supports it there."""
    if dtype in _LOWER_OK[device_type]:
        return True
    if dtype is _dtype.bfloat16:
        _check_dtype(device_type, dtype)
    supported = ", ".join(f"tensor.{d.name}" for d in _LOWER_OK[device_type])
    warnings.warn(
        f"In {device_type.upper()} autocast, but the target dtype is not supported. Disabling autocast.\n"
        f"{device_type.upper()} Autocast only supports dtypes of {supported} currently.",
        stacklevel=3,
    )
    return False


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

    A ``dtype`` autocast does not support there (``cpu``: bfloat16, float16; ``cuda``:
    float16) warns and disables the region, as in PyTorch.

    Raises:
        RuntimeError: for a device type other than ``cpu`` or ``cuda``.
        TypeError: for bfloat16 on cuda (CuPy has no bfloat16).
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
        self.fast_dtype = _DEFAULT_DTYPES[device_type] if dtype is None else _dtype.as_dtype(dtype)
        self._enabled = bool(enabled) and _supported(device_type, self.fast_dtype)
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
    target = _target(op.name, policy, inputs, state.dtype[device_type])
    return tuple(_cast(t, target, policy, state) for t in inputs)


def _target(op_name: str, policy: str, tensors, lower: _dtype.dtype) -> _dtype.dtype | None:
    """The dtype ``policy`` casts ``tensors`` to (None: leave them).

    Raises:
        RuntimeError: for a float64 input beside another floating one of a lowered op, which
            PyTorch leaves float64 while the other is lowered, and its GEMM then refuses.
    """
    if policy == "fp32":
        return _dtype.float32
    if policy == "promote":
        return _widest(tensors)
    floats = {t.dtype for t in tensors if _dispatch.is_tensor(t) and t.dtype.is_floating_point}
    if _dtype.float64 in floats and len(floats) > 1:
        raise RuntimeError(
            f"{op_name}: expected all floating inputs to have the same dtype under autocast, but got "
            f"float64 and {lower.name} (autocast leaves float64 inputs as they are)"
        )
    return lower


# The op names of the composites decorated with ``as_op`` (the others on the lists name primitives,
# or PyTorch ops whose front ends do not carry the decorator yet).
AS_OP_NAMES: set[str] = set()


def as_op(name: str):
    """Decorate a composite front end that PyTorch runs as the one op ``name`` under autocast:
    inside a region, its tensor arguments (also those in a list or tuple argument) are cast by
    ``name``'s policy in ``POLICIES`` (none when it is not listed) and its body runs with autocast
    off, so that the primitives it runs are not cast again (Note [Autocast at the dispatcher]).
    Outside any region the cost is one global test. The decorated function runs one frame below
    its caller, always: a ``stacklevel`` of its warnings counts the wrapper.

    Raises:
        RuntimeError: what the policy's cast raises (a float64 input of a lowered op).
    """

    def decorate(fn):
        AS_OP_NAMES.add(name)

        @functools.wraps(fn)
        def run(*args, **kwargs):
            device_type = None if _dispatch.autocast is None else _enabled_device_type(args, kwargs)
            if device_type is None:
                return fn(*args, **kwargs)
            args, kwargs = _cast_args(name, device_type, args, kwargs)
            _state.enabled[device_type] = False
            try:
                return fn(*args, **kwargs)
            finally:
                _state.enabled[device_type] = True

        return run

    return decorate


def _enabled_device_type(args: tuple, kwargs: dict) -> str | None:
    """The device type of the first tensor argument when autocast is on for it, else None."""
    for arg in (*args, *kwargs.values()):
        tensors = _tensors_in(arg)
        if tensors:
            device_type = tensors[0]._device.type
            return device_type if _state.enabled.get(device_type) else None
    return None


def _cast_args(name: str, device_type: str, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """``args`` and ``kwargs`` with their tensors cast by ``name``'s policy on ``device_type``."""
    state = _state
    policy = POLICIES[device_type].get(name)
    if policy is None:
        return args, kwargs
    tensors = [t for arg in (*args, *kwargs.values()) for t in _tensors_in(arg)]
    target = _target(name, policy, tensors, state.dtype[device_type])
    args = tuple(_cast_arg(a, target, policy, state) for a in args)
    return args, {k: _cast_arg(v, target, policy, state) for k, v in kwargs.items()}


def _tensors_in(arg) -> tuple:
    if _dispatch.is_tensor(arg):
        return (arg,)
    if isinstance(arg, (list, tuple)):
        return tuple(a for a in arg if _dispatch.is_tensor(a))
    return ()


def _cast_arg(arg, target, policy, state):
    if isinstance(arg, (list, tuple)) and not _dispatch.is_tensor(arg):
        cast = [_cast(a, target, policy, state) for a in arg]
        return cast if isinstance(arg, list) else tuple(cast)
    return _cast(arg, target, policy, state)


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
