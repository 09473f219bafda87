"""A split region's slice as one generated numba function (Note [Native regions] in native.py).

``build(region)`` writes, for a ``SplitRegion`` whose products are all matrices of float32 or
float64, a function ``kernel(flags, post, seq, spins, lo, hi, first, x0, x1, ...)`` that computes
one thread's slice ``[lo, hi)`` of every step: each product through ``native.gemm`` on
slices of the whole arrays, each fused kernel called with its split bounds. ``x0, x1, ...``
are the whole arrays the steps read and write, the same for every thread except each
thread's own buffers of partial sums. With ``post`` (the caller's slice) the function first
publishes the region's sequence number ``seq`` to the waiting workers (``region_pool.py``) and
ends polling ``spins`` times for them (``native.finish``).
"""

from __future__ import annotations

import hashlib
import os

import numpy as np

from . import native
from .codegen_numba import load_kernel

__all__ = ["NativeRegion", "build"]

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "native.py"), "rb") as _f:
    _NATIVE_DIGEST = hashlib.sha256(_f.read()).hexdigest()[:16]


class NativeRegion:
    """The generated slice function of a region and the arguments of each of its calls."""

    def __init__(self, source: str, operands: list, products: list) -> None:
        self.source = source
        self._operands = operands  # per argument: ("array", node id), ("part", node id), ...
        self._products = products  # argument positions BLAS reads: copied where it cannot in place
        self._parts = [(k, key) for k, (kind, key) in enumerate(operands) if kind == "part"]
        self._fn = None

    def function(self):
        """The compiled slice function (its module imports the fused kernels ``build`` loaded)."""
        if self._fn is None:
            self._fn = load_kernel(self.source)
        return self._fn

    def arguments(self, arrays: dict, parts: dict, blocks: list) -> list:
        """Per thread, the arguments after ``(flags, post, seq, spins)``: ``(lo, hi, first, x0, ...)``."""
        common, kernel_operands = [], {}
        for kind, key in self._operands:
            if kind == "array":
                common.append(arrays[key])
            elif kind == "transposed":
                common.append(arrays[key].T)
            elif kind == "kernel":
                kernel, index, inputs = key
                if kernel not in kernel_operands:  # as FusedKernel.run_slice passes them
                    kernel_operands[kernel] = kernel._operands([arrays[i] for i in inputs])
                common.append(kernel_operands[kernel][index])
            else:
                common.append(None)  # a thread's own partial sums, below
        for k in self._products:
            common[k] = _readable(common[k])
        per_thread = []
        for t, (lo, hi) in enumerate(blocks):
            args = [lo, hi, t == 0, *common]
            for k, node in self._parts:
                args[3 + k] = parts[node][t]
            per_thread.append(tuple(args))
        return per_thread


# Per product mode (``_Product.mode``): the slices of ``a``, ``b``, the output and the bias.
_SLICES = {
    "partial": ("[:, lo:hi]", "[lo:hi]", "", ""),
    "columns": ("", "[:, lo:hi]", "[:, lo:hi]", "[lo:hi]"),
    "rows": ("[lo:hi]", "", "[lo:hi]", ""),
}


def _readable(array):
    """``array``, or a C-contiguous copy where BLAS cannot read it in place."""
    if array.ndim != 2:
        return array
    size = array.itemsize
    trans, _ = native.blas_layout(array.strides[0] // size, array.strides[1] // size, *array.shape)
    return array if trans else np.ascontiguousarray(array)


def build(region, nodes) -> NativeRegion | None:
    """The native slice of ``region`` (a ``region_runner.SplitRegion`` of the graph ``nodes``),
    or None where it cannot have one: no BLAS symbols, a product of other than two matrices,
    or a dtype BLAS lacks."""
    from .region_runner import _Product  # noqa: PLC0415 - region_runner imports this module

    if not native.AVAILABLE:
        return None
    operands: list = []
    products: list = []
    index: dict = {}

    def arg(kind, key) -> str:
        if (kind, key) not in index:
            index[(kind, key)] = len(operands)
            operands.append((kind, key))
        return f"x{index[(kind, key)]}"

    lines, imports = [], []
    for op in region.ops:
        if isinstance(op, _Product):
            if op.ndim != 2 or nodes[op.out].dtype not in (np.float32, np.float64):
                return None
            b_kind = "transposed" if op.transposed else "array"
            a, b = arg("array", op.a), arg(b_kind, op.b)
            products += [index[("array", op.a)], index[(b_kind, op.b)]]
            a_part, b_part, out_part, bias_part = _SLICES[op.mode]
            out = arg("part" if op.mode == "partial" else "array", op.out)
            lines.append(f"gemm({a}{a_part}, {b}{b_part}, {out}{out_part}, 0.0)")
            if op.bias is not None:  # a partial sum gets the bias on the first thread only
                add = f"add_bias({out}{out_part}, {arg('array', op.bias)}{bias_part})"
                lines.append(f"if first:\n        {add}" if op.mode == "partial" else add)
        else:
            kernel, out, inputs = op.args
            name = f"k{len(imports)}"
            kernel._load()  # the generated module imports it by its module's name
            imports.append(f"from {kernel._kernel.py_func.__module__} import kernel as {name}")
            sizes = [str(s) for s in kernel._sizes]
            sizes[kernel.spec.bounds[0]], sizes[kernel.spec.bounds[1]] = "lo", "hi"
            ins = [arg("kernel", (kernel, k, tuple(inputs))) for k in range(len(inputs))]
            lines.append(f"{name}({arg('array', out)}, ({', '.join(sizes)},), {', '.join(ins)})")
    params = ", ".join(f"x{k}" for k in range(len(operands)))
    body = "\n    ".join(lines)
    source = (
        f"# native region: native.py {_NATIVE_DIGEST}, BLAS {native.BLAS['s'][0]} {native.BLAS['d'][0]}\n"
        f"from {__package__}.native import add_bias, finish, gemm, post as post_region\n"
        + "\n".join(imports)
        + "\n\n\n"
        "@njit(nogil=True, error_model=\"numpy\", cache=True)\n"
        f"def kernel(flags, post, seq, spins, lo, hi, first, {params}):\n"
        "    if post:\n        post_region(flags, seq)\n"
        f"    {body}\n"
        "    return finish(flags, post, seq, spins)\n"
    )
    return NativeRegion(source, operands, products)
