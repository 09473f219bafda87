"""Running a split region (Note [Split regions] in split_region.py): its steps on every thread,
each on its slice, natively where it can (Note [Native regions] in native.py)."""

from __future__ import annotations

import functools
import warnings

import numpy as np

from .. import _dispatch, _threads
from . import native_region, region_pool
from .split_region import _product_operands, _Region

__all__ = ["SplitRegion"]

# A thread's slice narrower than this (with more threads than split_region.py's _MIN_SLICE
# planned for) makes BLAS's blocks inefficient (see _threads._COLUMN_BLOCK): the region then
# runs unsplit.
_MIN_RUN_SLICE = 64
# Slices start at multiples of this, so that every thread's rows of a kernel start a vector.
_ALIGN = 16


def _blocks(extent: int, threads: int) -> list[tuple[int, int]]:
    """``threads`` ranges ``(lo, hi)`` covering ``range(extent)``, inner edges at multiples of ``_ALIGN``."""
    return [(block.start, block.stop) for block in _threads.blocks(extent, threads, _ALIGN)]


class SplitRegion:
    """The runner of a split region: its steps on every thread, each on its slice."""

    def __init__(self, graph, plan, region: _Region, kernels: dict, fallback: list) -> None:
        nodes = graph.nodes
        self.region, self.fallback = region, fallback
        self.device = nodes[plan[region.steps[0]].node].device
        self.ops, self.made, self.views = [], [], []
        self.partials = [(n, nodes[n].shape, nodes[n].dtype) for n in sorted(region.partial)]
        self.reads: set = set()
        inside = {plan[k].node for k in region.steps}
        for k in region.steps:
            step = plan[k]
            node = nodes[step.node]
            if step.kind == "kernel":
                kernel = kernels[k]
                self.reads |= {i for i in kernel.spec.inputs if i not in inside}
                self.ops.append(functools.partial(_run_kernel_slice, kernel, node.id, kernel.spec.inputs))
                self.made.append(node)
            elif node.op.name in ("permute", "view"):
                dims = node.params[0] if node.op.name == "permute" else None
                self.views.append((node.id, node.args[0], dims, node.shape))
            else:
                self.reads |= {a for a in node.args if a not in inside}
                mode = None if node.id in region.partial else region.axis[node.id]
                self.ops.append(_Product(node.id, *_product_operands(node, nodes), mode, len(node.shape)))
                if node.id not in region.partial:
                    self.made.append(node)
        self.nodes = inside
        self._blocks: dict = {}
        self._ready = False
        self.native = native_region.build(self, nodes)
        self.linger = False  # another region follows soon (set by the lowering; Note [Native regions])

    def __call__(self, env, leaves) -> None:
        threads = _threads.get_num_threads()
        blocks = self._blocks.get(threads)
        if blocks is None:
            blocks = self._blocks[threads] = _blocks(self.region.extent, threads)
        if threads < 2 or blocks[0][1] - blocks[0][0] < _MIN_RUN_SLICE:
            self._run_fallback(env, leaves)
            return
        arrays = {n: env[n]._data for n in self.reads}
        for node in self.made:
            arrays[node.id] = np.empty(node.shape, node.dtype)
        for node_id, source, dims, shape in self.views:  # views, never copies (see _is_view_in_region)
            arrays[node_id] = arrays[source].reshape(shape) if dims is None else arrays[source].transpose(dims)
        # One buffer per thread, so that the sum into the first one owns its memory (an output the
        # engine may adopt as a .grad uncopied).
        parts = {n: [np.empty(shape, dtype) for _ in range(threads)] for n, shape, dtype in self.partials}
        if not (self._run_native(arrays, parts, blocks) if self.native else self._run_python(arrays, parts, blocks)):
            self._run_fallback(env, leaves)
            return
        for node_id in self.nodes:
            if node_id in parts:
                value = parts[node_id]  # summed into the first thread's part: no fresh buffer
                total = value[0]
                for t in range(1, threads):
                    total += value[t]
                arrays[node_id] = total
            env[node_id] = _dispatch.make(arrays[node_id], self.device)

    def _run_native(self, arrays, parts, blocks) -> bool:
        args = self.native.arguments(arrays, parts, blocks)
        if not self._ready:  # compile here, not on two threads at once: an empty slice
            try:
                self.native.function()(np.zeros(1, np.int64), False, 0, 0, 0, 0, True, *args[0][3:])
            except Exception as error:  # noqa: BLE001 - numba could not build it: the Python path can
                warnings.warn(f"tensor.compile: a split region runs op by op: {error}", RuntimeWarning, stacklevel=2)
                self.native = None
                return self._run_python(arrays, parts, blocks)
            self._ready = True
        return region_pool.run(self.native.function(), args, self.linger)

    def _run_python(self, arrays, parts, blocks) -> bool:
        if not self._ready:  # compile the kernels here, not on two threads at once
            self._slice(arrays, parts, 0, (0, 0))
            self._ready = True
        jobs = [functools.partial(self._slice, arrays, parts, t, block) for t, block in enumerate(blocks)]
        return _threads.run_parallel(jobs)

    def _slice(self, arrays, parts, t, block) -> None:
        lo, hi = block
        for op in self.ops:
            op(arrays, parts, t, lo, hi)

    def _run_fallback(self, env, leaves) -> None:
        for run in self.fallback:
            run(env, leaves)


class _Product:
    """One thread's share of a product ``a @ b`` (``a @ b.T + bias`` when ``transposed``, ``b``
    a matrix): the slice of the output along its dim ``dim`` (a row or batch dim of ``a``, or
    the last: ``b``'s columns), or with ``dim`` None its partial sum over the contraction's
    slice into the thread's own buffer (the bias added by the first thread only)."""

    def __init__(self, out, a, b, transposed, bias, dim, ndim) -> None:
        self.out, self.a, self.b, self.transposed, self.bias, self.dim = out, a, b, transposed, bias, dim
        self.ndim = ndim

    @property
    def mode(self) -> str:
        """``partial``, ``columns`` (``b``'s) or ``rows`` (of ``a``, or a batch dim before them)."""
        if self.dim is None:
            return "partial"
        return "columns" if self.dim == self.ndim - 1 else "rows"

    def __call__(self, arrays, parts, t, lo, hi) -> None:
        a, b = arrays[self.a], arrays[self.b]
        b = b.T if self.transposed else b
        bias = None if self.bias is None else arrays[self.bias]
        if self.dim is None:
            out = parts[self.out][t]
            np.matmul(a[..., lo:hi], b[lo:hi], out=out)
            bias = bias if t == 0 else None
        elif self.dim == self.ndim - 1:
            out = arrays[self.out][..., lo:hi]
            np.matmul(a, b[:, lo:hi], out=out)
            bias = None if bias is None else bias[lo:hi]
        else:
            rows = (slice(None),) * self.dim + (slice(lo, hi),)
            out = arrays[self.out][rows]
            np.matmul(a[rows], b, out=out)
        if bias is not None:
            out += bias


def _run_kernel_slice(kernel, out, inputs, arrays, parts, t, lo, hi) -> None:
    kernel.run_slice(arrays[out], [arrays[i] for i in inputs], lo, hi)
