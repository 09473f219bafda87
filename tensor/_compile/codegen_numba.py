"""CPU code generation: each fused group's source (``emitter.py``) compiled by numba.

The source is written to ``<cache_dir>/fused_<hash>.py`` and compiled with
``njit(parallel=True, cache=True)``: the outer loop is a ``prange`` run on
``tensor.get_num_threads()`` threads, and numba keeps the machine code beside the file,
so another process with the same kernel loads it instead of compiling.
``TENSOR_LOGS=output_code`` (or ``tensor.compile.config.output_code``) prints each
kernel's source as it is first used. numba is imported here only, on first use.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile

import numpy as np

from .. import _dispatch, _threads
from .config import config
from .emitter import emit_kernel

__all__ = ["FusedKernel", "load_cached", "load_kernel", "numba_available"]

_VECMATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vecmath.py")
with open(_VECMATH, "rb") as _f:
    # numba's cache of a kernel knows only the kernel's own file: the helpers it compiles in are
    # part of the source's digest, so that editing them recompiles every kernel.
    _VECMATH_DIGEST = hashlib.sha256(_f.read()).hexdigest()[:16]
_PRELUDE = (
    f"import math\n\nimport numpy as np\nfrom numba import njit, prange\n\n"
    f"from {__package__}.vecmath import assume_equal, exp_f32, exp_f64, fmaximum, fminimum, tanh_f32"
    f"  # vecmath.py {_VECMATH_DIGEST}\n\n\n"
)
_LOADED: dict = {}
_threads_set = [None]


def numba_available() -> bool:
    """Whether numba can be imported (the default backend falls back to eager without it)."""
    return importlib.util.find_spec("numba") is not None


def load_kernel(source: str):
    """The compiled ``kernel`` function of ``source`` (written to the cache dir once)."""
    text = _PRELUDE + source
    digest = hashlib.sha256(text.encode()).hexdigest()[:20]
    kernel = _LOADED.get(digest)
    if kernel is not None:
        return kernel
    os.makedirs(config.cache_dir, exist_ok=True)
    path = os.path.join(config.cache_dir, f"fused_{digest}.py")
    if not os.path.exists(path):
        fd, tmp = tempfile.mkstemp(dir=config.cache_dir, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)  # atomic: a concurrent process sees the whole file or none
    spec = importlib.util.spec_from_file_location(f"_tensor_fused_{digest}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # numba's disk cache finds the kernel's globals by module name
    spec.loader.exec_module(module)
    _LOADED[digest] = kernel = module.kernel
    return kernel


# Note [Warm start]: a process whose kernels are all in the disk cache still pays numba's own
# start-up: its import (~0.5 s here with numpy loaded, 1.2 s under load) and compiling its
# runtime (NRT, ~0.1 s). Importing numba in a background thread at decoration time was tried
# and dropped: a main thread importing a numba submodule meanwhile (``from numba.core import
# cpu``) meets the half-imported package and fails (Python's import deadlock avoidance).
#
# A dispatcher with ``cache=True`` looks for its machine code on disk only
# after refreshing numba's target context, which imports and installs every implementation
# registry numba has (~0.5-1.8 s here, more than loading the code) although only a compile
# needs them. ``load_cached`` installs the overload from numba's own disk cache (the same
# index, keyed by signature, CPU and source stamp) with only numba's runtime initialised.
# Anything missing or failing leaves the dispatcher as it was: its own call then refreshes,
# loads or compiles as usual, and so does every kernel compiled later in the process.
def load_cached(kernel, args) -> bool:
    """Install ``kernel``'s overload for ``args`` from numba's disk cache (Note [Warm start])."""
    from numba.core.compiler_lock import global_compiler_lock  # noqa: PLC0415 - numba loads lazily
    from numba.core.runtime import nrt  # noqa: PLC0415

    try:
        with global_compiler_lock:
            sig = tuple(kernel.typeof_pyval(a) for a in args)
            if sig in kernel.overloads:
                return True
            nrt.rtsys.initialize(kernel.targetctx)
            cres = kernel._cache._load_overload(sig, kernel.targetctx)
            if cres is None or cres.objectmode:
                return False
            kernel.targetctx.insert_user_function(cres.entry_point, cres.fndesc, [cres.library])
            kernel.add_overload(cres)
            kernel._cache_hits[sig] += 1
            return True
    except Exception:  # noqa: BLE001 - numba internals of another version: its own call path still works
        return False


# Note [Threading layer]: numba's default layer on this machine is OpenMP, whose threads
# spin after each parallel loop and so take the cores from our own matmul pool
# (tensor/_threads.py) and from the next numpy op: a compiled MLP train step on 2 threads
# took 27x its eager time. The work-queue layer sleeps between loops. NUMBA_THREADING_LAYER
# still wins when set.
_LAYER = os.environ.get("NUMBA_THREADING_LAYER", "workqueue")


def _use_threads() -> None:
    wanted = _threads.get_num_threads()
    if _threads_set[0] != wanted:
        import numba  # noqa: PLC0415 - numba loads only when a kernel runs

        numba.config.THREADING_LAYER = _LAYER
        numba.set_num_threads(max(1, min(wanted, numba.config.NUMBA_NUM_THREADS)))
        _threads_set[0] = wanted


class FusedKernel:
    """Runs one fused group: reads its inputs from ``env``, writes its root's value.

    Note [Cold calls]: a training step calls a kernel right after products that streamed
    megabytes through the core's cache, so the Python around the call runs with its objects
    in L3 (a guard key that takes 1.3 us in a loop took 16 us there). The call path touches
    as little as it can: what does not change between calls is decided here, once."""

    def __init__(self, graph, root: int, members, split_dim: int | None = None) -> None:
        self.spec = emit_kernel(graph, root, members, split_dim)
        node = graph.nodes[root]
        self.root, self.shape, self.dtype, self.device = root, node.shape, node.dtype, node.device
        self.source = self.spec.source
        order = self.spec.out_order
        self._unpermute = None if order is None else tuple(order.index(d) for d in range(len(order)))
        self._inputs, self._out_shape, self._sizes = self.spec.inputs, self.spec.out_shape, self.spec.sizes
        self._plain = not self.spec.in_orders and all(len(graph.nodes[i].shape) for i in self._inputs)
        self._kernel = None

    def _load(self):
        if self._kernel is None:
            if config.output_code:
                print(f"# tensor.compile output_code (kernel for %{self.root}):\n{self.source}", file=sys.stderr)
            self._kernel = load_kernel(self.source)
        return self._kernel

    def _operands(self, arrays) -> list:
        if self._plain:  # no 0-d input and none passed transposed
            return arrays
        arrays = [_as_operand(a) for a in arrays]
        for k, order in self.spec.in_orders.items():  # Note [Eager layouts]: C-contiguous when eager-stored
            arrays[k] = arrays[k].transpose(order)
        return arrays

    def __call__(self, env) -> None:
        kernel = self._kernel or self._load()
        if self.spec.parallel:
            _use_threads()
        arrays = self._operands([env[i]._data for i in self._inputs])
        out = np.empty(self._out_shape, self.dtype)
        if not kernel.overloads:
            load_cached(kernel, (out, self._sizes, *arrays))
        kernel(out, self._sizes, *arrays)
        if self._unpermute is not None:  # ``out`` holds the axes in their eager memory order
            out = out.transpose(self._unpermute).reshape(self.shape)
        else:  # in place, so ``out`` stays its own base: the engine adopts a gradient as .grad uncopied
            out.shape = self.shape
        env[self.root] = _dispatch.make(out, self.device)

    def run_slice(self, out, inputs, lo: int, hi: int) -> None:
        """Write the elements of ``out`` (the root's whole array, C-contiguous) whose split dim
        index is in ``[lo, hi)``, from the whole ``inputs`` (a kernel made with ``split_dim``)."""
        kernel = self._kernel or self._load()
        arrays = self._operands(inputs)
        sizes = list(self._sizes)
        sizes[self.spec.bounds[0]], sizes[self.spec.bounds[1]] = lo, hi
        if not kernel.overloads:
            load_cached(kernel, (out, tuple(sizes), *arrays))
        kernel(out, tuple(sizes), *arrays)


def _as_operand(array):
    return array.reshape(1) if array.ndim == 0 else array
