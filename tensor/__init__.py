"""``tensor``: n-d arrays on CPU (numpy) or CUDA (CuPy), with autograd. Our ``torch``.

    >>> import tensor
    >>> x = tensor.ones(2, 3, requires_grad=True)
    >>> (x * 2).sum().backward()
    >>> x.grad
    tensor([[2., 2., 2.],
            [2., 2., 2.]])
"""

from ._accelerator import accelerated as _accelerated  # noqa: I001 - first: loads the .py sources if DISTRIB_PURE_PYTHON=1
from ._tensor import Tensor  # the modules below build on the class
from . import _higher_layers, _torch_aliases, cuda
from ._creation import (
    arange, as_tensor, empty, empty_like, eye, from_numpy, full, full_like,
    linspace, ones, ones_like, tensor, zeros, zeros_like,
)
from ._dlpack import from_dlpack, to_dlpack  # objects with __dlpack__, and bare capsules
from ._device import device, get_default_device, set_default_device
from ._dtype import (
    bool_ as bool,  # noqa: A004 - PyTorch's name, reachable only as tensor.bool
    complex64, complex128, dtype, float16, float32, float64, get_default_dtype, int8, int16, int32, int64,
    promote_types, set_default_dtype, uint8,
)
from ._dtype import bfloat16, float8_e4m3fn, float8_e5m2, result_type_of as result_type
from ._random import (
    Generator, bernoulli, default_generator, get_rng_state, initial_seed, manual_seed,
    multinomial, normal, rand, rand_like, randint, randint_like, randn, randn_like, randperm,
    seed, set_rng_state,
)
from .ops import *  # noqa: F403 - the functional forms of every op
from .ops import abs, all, any, max, min, pow, round, sum  # noqa: A004 - PyTorch's names
import tensor.linalg as linalg  # the public namespace; ``from .ops import *`` bound the internal module
from .serialization import load, save
from . import fft
import tensor.special as special  # as linalg: the star import bound tensor.ops.special
from .linalg import matrix_exp, matrix_power, pinverse
from .ops.decomp import torch_svd as svd
from .ops.lu import lu_solve, lu_unpack, torch_lu as lu
from .ops.spectral import istft, stft
from .ops.householder import geqrf, orgqr, ormqr
from ._lobpcg import lobpcg
from .ops.layout import moveaxis as movedim  # accepts sequences of dims, as torch.movedim
from ._threads import get_num_threads, set_num_threads
from ._compile import compile  # noqa: A004 - PyTorch's name, reachable as tensor.compile
from . import onnx
from . import accelerator, backends
from . import profiler
from . import random, testing
from . import amp
from ._autocast import (
    autocast, autocast_decrement_nesting, autocast_increment_nesting, clear_autocast_cache, get_autocast_cpu_dtype,
    get_autocast_dtype, get_autocast_gpu_dtype, is_autocast_cache_enabled, is_autocast_cpu_enabled,
    is_autocast_enabled, set_autocast_cache_enabled, set_autocast_cpu_dtype, set_autocast_cpu_enabled,
    set_autocast_dtype, set_autocast_enabled, set_autocast_gpu_dtype,
)
from ._memory_snapshot import memory_snapshot
from ._aten_entry import (  # issue 16: ATen entry points (compositions; nn imported when called)
    affine_grid_generator, convolution, embedding_bag, embedding_renorm_, feature_dropout, feature_dropout_,
    grid_sampler, grid_sampler_2d, grid_sampler_3d, i0_, native_dropout,
)
from ._aten_norm import (
    batch_norm_backward_elemt, batch_norm_backward_reduce, batch_norm_elemt, batch_norm_gather_stats,
    batch_norm_gather_stats_with_counts, batch_norm_stats, batch_norm_update_stats, native_batch_norm,
    native_group_norm, native_layer_norm, native_norm, norm_except_dim,
)
from ._aten_rnn import gru, gru_cell, lstm, lstm_cell, rnn_relu, rnn_relu_cell, rnn_tanh, rnn_tanh_cell
from ._random_extra import binomial, poisson
from ._random_extra import standard_gamma as _standard_gamma
from .ops.special_extra import standard_gamma_grad as _standard_gamma_grad
from ._torch_misc import (
    Size, adjoint, asarray, can_cast, cholesky_inverse, cholesky_solve, empty_permuted, empty_strided, fill,
    get_device, get_float32_matmul_precision, is_inference_mode_enabled, is_storage, kaiser_window, layout, range,
    scalar_tensor, strided,
    set_float32_matmul_precision, split_with_sizes, triangular_solve, unsafe_chunk, unsafe_split,
    unsafe_split_with_sizes, typename, is_vulkan_available, REMOVED_FUNCTIONS as _REMOVED_FUNCTIONS,
)
from ._lowrank import pca_lowrank, svd_lowrank
from . import _legacy_classes  # builds on _torch_misc.Size
from . import _numpy_names, _out_arg, _tensor_methods
from ._typeinfo import finfo, iinfo
from ._storage import TypedStorage, UntypedStorage
from ._runtime_flags import (
    are_deterministic_algorithms_enabled, channels_last, channels_last_3d, contiguous_format,
    get_deterministic_debug_mode, get_device_module, get_num_interop_threads, init_num_threads,
    is_anomaly_check_nan_enabled, is_anomaly_enabled, is_deterministic_algorithms_warn_only_enabled, is_distributed,
    is_warn_always_enabled, memory_format, preserve_format, set_anomaly_enabled, set_default_tensor_type,
    set_deterministic_debug_mode, set_flush_denormal, set_num_interop_threads, set_warn_always, thread_safe_generator,
    use_deterministic_algorithms,
)
from ._streams import Event, Stream
from ._format import set_printoptions
from ._buffers import from_file, frombuffer
from ._control_flow import cond, while_loop
from ._vmap import vmap
from . import cpu, func
from .amp import GradScaler
from ._autograd_hooks import api as _api, grad_mode as _grad_mode

half, float, double = float16, float32, float64  # noqa: A001 - PyTorch's aliases
short, int, long = int16, int32, int64  # noqa: A001
cfloat, cdouble = complex64, complex128


def is_tensor(obj) -> bool:
    """True if ``obj`` is a Tensor (or Parameter)."""
    return isinstance(obj, Tensor)


def is_complex(input: Tensor) -> bool:
    """True if ``input`` has a complex dtype."""
    return input.is_complex()


def numel(input: Tensor) -> int:
    """The number of elements of ``input``."""
    return input.numel()


def is_grad_enabled() -> bool:
    """Whether ops are being recorded for autograd in this thread."""
    return _grad_mode.enabled


def no_grad(orig_func=None):
    """``autograd.no_grad``, re-exported as ``torch.no_grad`` is (``@tensor.no_grad`` decorates too)."""
    return _api.no_grad(orig_func)


def enable_grad(orig_func=None):
    """``autograd.enable_grad``, re-exported (``@tensor.enable_grad`` decorates too)."""
    return _api.enable_grad(orig_func)


def set_grad_enabled(mode: bool):
    """``autograd.set_grad_enabled``, re-exported."""
    return _api.set_grad_enabled(mode)


def inference_mode(mode=True):
    """``autograd.inference_mode``, re-exported (``@tensor.inference_mode`` decorates too)."""
    return _api.inference_mode(mode)


# torch's method forms, in-place and view-copy variants, ATen-signature nn.functional wrappers
globals().update(_torch_aliases.forms(globals()))
globals().update(_legacy_classes.CLASSES)  # tensor.FloatTensor & co.
globals().update(_REMOVED_FUNCTIONS)  # tensor.solve & co.: removed from PyTorch in 1.9, raise saying what replaced them
_tensor_methods.install()  # torch.Tensor methods built from the functions above
_numpy_names.install(globals(), [n for n in list(globals()) if not n.startswith("_")], Tensor)  # axis=, keepdims=
_out_arg.install(globals())  # out=

# ``tensor.autograd``, ``tensor.nn``, ``tensor.optim``, ``tensor.distributed``, ``tensor.hub``,
# ``tensor.multiprocessing``, ``tensor.utils.data``: the higher layers, and ``tensor.conv2d`` & co. (nn.functional's
# functions), imported on first access (tensor/_higher_layers.py).
__getattr__ = _higher_layers.module_getattr(
    __name__,
    globals(),
    {"autograd": "autograd", "nn": "nn", "optim": "nn.optim", "distributed": "distrib", "utils": "tensor.utils",
     "hub": "nn.hub", "multiprocessing": "distrib.multiprocessing", "distributions": "tensor.distributions"},
    dict.fromkeys(_torch_aliases.F_ALIASES, "nn.functional"),
)
