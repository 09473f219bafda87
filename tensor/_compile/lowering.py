"""Lowering: turn one segment of a captured graph into a callable ``run(env, leaves)``.

``backend="eager"`` runs the nodes one by one through the dispatcher. The default
backend fuses pointwise chains and the reductions that follow them (``fusion.py``) and
compiles each group (``codegen_numba.py`` on the CPU, ``codegen_cupy.py`` on a GPU); library calls (matmul,
convolution windows, ...) stay dispatcher calls. A graph whose inputs require grad is
trained through a joint forward/backward graph (``aot.py``), or, where that does not
apply, runs through the dispatcher so that autograd records it. Without numba the
default backend is the eager one.
"""

from __future__ import annotations

import functools
import importlib

from .. import _dispatch
from . import aot, fusion
from .aot import AotSegment
from .config import config
from .runner import eager_segment, has_ref, run_node

__all__ = ["lower", "kernels_of"]


def lower(graph, start: int, stop: int, backend: str, options: dict, differentiable: bool):
    """The runner of nodes ``[start, stop)`` of ``graph``."""
    nodes = graph.nodes[start:stop]
    if backend == "eager" or not _numba():
        return eager_segment(nodes)
    fused = functools.partial(_fused_segment, split_regions=options.get("split_regions", config.split_regions))
    if differentiable:
        whole = (start, stop) == (0, len(graph.nodes))
        return AotSegment(graph, fused) if whole and aot.supports(graph) else eager_segment(nodes)
    return fused(graph, start, stop)


def _numba() -> bool:
    from .codegen_numba import numba_available  # noqa: PLC0415 - keeps numba's loader out of import

    return numba_available()


def _fused_kernel(graph, step, split_dim=None):
    """The kernel of a fused step, from the generator its device's backend names
    (``Backend.fused_codegen``: ``codegen_numba`` on the CPU, ``codegen_cupy`` on a GPU);
    with ``split_dim``, the CPU kernel of a split region's step (Note [Split regions])."""
    codegen = graph.nodes[step.node].device.backend.fused_codegen
    module = importlib.import_module(f"{__package__}.codegen_{codegen}")
    if split_dim is None:
        return module.FusedKernel(graph, step.node, step.members)
    return module.FusedKernel(graph, step.node, step.members, split_dim)


def kernels_of(graph, start: int, stop: int) -> list:
    """The fused kernels of a segment, in order (for tests and ``output_code``)."""
    return [_fused_kernel(graph, s) for s in fusion.plan(graph, start, stop) if s.kind == "kernel"]


def _fused_segment(graph, start, stop, split_regions=True, regions_follow=False):
    """The runner of a segment's fusion plan. ``regions_follow``: more split regions run soon
    after this segment's last one (a forward's, then its backward's: Note [Native regions])."""
    outputs = fusion.live_after(graph, len(graph.nodes))  # returned, read at a break, or written back
    checked, direct = [], []  # the steps through the dispatcher, and through Note [Library calls]
    reads = []  # per step: the node ids it reads from env (None: not known), for _pair_products
    plan = fusion.plan(graph, start, stop)
    for step in plan:
        if step.kind == "kernel":
            kernel = functools.partial(_run_kernel, _fused_kernel(graph, step))
            checked.append(kernel)
            direct.append(kernel)
            reads.append(_kernel_reads(graph, step))
        else:
            node = graph.nodes[step.node]
            slow = functools.partial(_run_one, node)
            checked.append(slow)
            direct.append(_library_call(node, step.node in outputs) or slow)
            reads.append(None if has_ref(node.params) else set(node.args))
    if split_regions:
        plan, direct, reads = _with_split_regions_lingering(graph, plan, direct, reads, regions_follow)
    direct = _pair_products(graph, plan, direct, reads)

    def run(env, leaves):
        hooked = _dispatch.profiler is not None or _dispatch.autocast is not None
        for step in checked if hooked else direct:
            step(env, leaves)

    return run


def _with_split_regions_lingering(graph, plan, runners: list, reads: list, regions_follow: bool) -> tuple:
    """``_with_split_regions``, each region told whether another follows soon: all but the
    last, and the last too with ``regions_follow`` (Note [Native regions])."""
    from .region_runner import SplitRegion  # noqa: PLC0415 - numba loads with the first region

    plan, runners, reads = _with_split_regions(graph, plan, runners, reads)
    regions = [step for step in runners if isinstance(step, SplitRegion)]
    for k, region in enumerate(regions):
        region.linger = k + 1 < len(regions) or regions_follow
    return plan, runners, reads


def _with_split_regions(graph, plan, runners: list, reads: list) -> tuple:
    """``(plan, runners, reads)`` with the segment's split regions worth running, each as one
    step (Note [Split regions] in split_region.py): the best region's class is chosen first,
    the steps it does not need move before it and the steps that read what it computes stay
    after it, and both sides are searched again (one region for each block of an MLP stack)."""
    from . import region_runner, split_region  # noqa: PLC0415 - they need the emitter, whose import needs this module's

    region = split_region.find_region(graph, plan)
    if region is None:
        return plan, runners, reads
    kernels = {
        k: _fused_kernel(graph, plan[k], region.axis[plan[k].node]) for k in region.steps if plan[k].kind == "kernel"
    }
    runner = region_runner.SplitRegion(graph, plan, region, kernels, [runners[k] for k in region.steps])
    moved = set(region.steps) | set(region.after)
    sides = []
    for side in ([k for k in range(len(plan)) if k not in moved], region.after):
        sides.append(_with_split_regions(graph, *([seq[k] for k in side] for seq in (plan, runners, reads))))
    (plan_before, runners_before, reads_before), (plan_after, runners_after, reads_after) = sides
    return (
        [*plan_before, split_region.region_step(region, plan), *plan_after],
        [*runners_before, runner, *runners_after],
        [*reads_before, runner.reads, *reads_after],
    )


# Note [Paired products]
#     A training step's backward computes, for each linear layer, the gradient of its input
#     (g @ W) and of its weight (g.T @ x): two independent products of the same size. Eager
#     code splits each one across the intra-op threads (Note [Intra-op matmul] in
#     tensor/_threads.py), two hand-offs and four half-size BLAS calls; the compiled segment
#     knows both products ahead, so it runs them side by side, each whole on its own thread
#     (``_threads.matmul_pair``): one hand-off, and BLAS's blocks stay whole. A matmul is
#     paired with the next one in the segment when that one does not depend on it; the steps
#     between that do not depend on the first (views, mostly) move before the pair, the others
#     after it. Where the pair does not apply (one thread, small products, a busy pool) both
#     run as single library calls.
def _pair_products(graph, plan, runners: list, reads: list) -> list:
    """``runners`` reordered so that independent large CPU matmuls run in pairs (Note
    [Paired products]); ``reads[k]`` is the set of node ids step ``k`` reads, or None."""
    order = list(range(len(plan)))
    pos = 0
    while pos < len(order):
        first = order[pos]
        if not _pairable(graph, plan[first]):
            pos += 1
            continue
        depends, before, after = {plan[first].node}, [], []
        for q in range(pos + 1, len(order)):
            k = order[q]
            read = reads[k]
            if read is not None and not read & depends and _pairable(graph, plan[k]):
                order[pos : q + 1] = [*before, (first, k), *after]
                pos += len(before) + 1
                break
            if read is None or read & depends:
                depends.add(plan[k].node)
                after.append(k)
            else:
                before.append(k)
        else:
            pos += 1
    return [
        functools.partial(
            _run_pair, *(_pair_args(graph.nodes[plan[k].node]) for k in step), runners[step[0]], runners[step[1]]
        )
        if isinstance(step, tuple)
        else runners[step]
        for step in order
    ]


def _kernel_reads(graph, step):
    """The node ids a fused step reads from outside its group (None where a parameter refers to one)."""
    members = set(step.members) | {step.node}
    nodes = [graph.nodes[m] for m in members]
    if any(has_ref(n.params) for n in nodes):
        return None
    return {a for n in nodes for a in n.args} - members


def _pairable(graph, step) -> bool:
    """Whether ``step`` is a plain 2-D float matmul (its device's backend decides, when it runs,
    whether the pair runs side by side: ``Backend.matmul_pair``)."""
    if step.kind != "eager":
        return False
    node = graph.nodes[step.node]
    if node.kind != "call" or node.via != "apply" or node.op.name != "matmul" or node.device is None:
        return False
    if node.dtype.name not in ("float32", "float64"):
        return False
    return all(len(graph.nodes[a].shape) == 2 and graph.nodes[a].dtype == node.dtype for a in node.args)


def _pair_args(node) -> tuple:
    return node.id, node.args[0], node.args[1], node.device


def _run_pair(first, second, run_first, run_second, env, leaves) -> None:
    (out1, a1, b1, device1), (out2, a2, b2, device2) = first, second
    products = device1.backend.matmul_pair(env[a1]._data, env[b1]._data, env[a2]._data, env[b2]._data)
    if products is None:
        run_first(env, leaves)
        run_second(env, leaves)
        return
    env[out1] = _dispatch.make(products[0], device1)
    env[out2] = _dispatch.make(products[1], device2)


def _run_one(node, env, leaves) -> None:
    run_node(node, env, leaves)


def _run_kernel(kernel, env, leaves) -> None:
    kernel(env)


# Note [Library calls]
#     Inside a fused segment no op records autograd history (the joint graph's halves run
#     under no_grad, and a segment that is not differentiable has nothing to record), the
#     graph has no in-place writes (functionalised) and its shapes and devices were fixed
#     at capture. So a library call (matmul, linear, a view) on the CPU need not go through
#     the dispatcher's device checks, hooks and view bookkeeping: the op's kernel runs on
#     the arrays and its result is wrapped as a new Tensor. A view that does not change the
#     shape (the engine's ``g.reshape(-1, n)`` of a 2-D gradient) is the same Tensor. In a
#     compiled MLP training step's backward (8 such nodes and 5 matmuls) this took the
#     runner's own cost from ~14 us to ~3 us a node. Values the segment returns keep the
#     dispatcher's view bookkeeping, and a profiler or an autocast region sends every node
#     through the dispatcher as before.
def _library_call(node, is_output: bool):
    """A runner ``(env, leaves)`` of one library-call ``node`` that skips the dispatcher
    (Note [Library calls]), or None where the dispatcher must run it."""
    if node.kind == "input":
        return functools.partial(_take_leaf, node.id, node.value)
    if (
        node.kind != "call"
        or node.via not in ("apply", "unary")
        or node.device is None
        or node.device.index is not None
        or has_ref(node.params)
    ):
        return None
    op, args, params = node.op, node.args, node.params
    if op.is_view:
        if is_output:
            return None
        if op.name == "view" and len(args) == 1 and all(type(s) is int for s in node.shape):
            return functools.partial(_same_or_reshape, node.id, args[0], tuple(node.shape))
    return functools.partial(_call_kernel, node.id, op.kernel, node.device, args, params)


def _take_leaf(node_id, index, env, leaves) -> None:
    env[node_id] = leaves[index]


def _same_or_reshape(node_id, source, shape, env, leaves) -> None:
    t = env[source]
    env[node_id] = t if t._data.shape == shape else _dispatch.make(t._data.reshape(shape), t._device)


def _call_kernel(node_id, kernel, device, args, params, env, leaves) -> None:
    backend = device._backend or device.backend  # as the dispatcher's plain call for an unindexed device
    out = kernel(backend.xp, *[env[a]._data for a in args], *params)
    env[node_id] = _dispatch.make(out if type(out) is backend.array_type else backend.xp.asarray(out), device)
