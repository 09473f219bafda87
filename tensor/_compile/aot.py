"""Training through compiled graphs: the backward is derived ahead of time and fused too.

Note [Joint graph]
    As AOTAutograd does, the forward and its backward are captured as one *joint* graph:
    the captured forward is run once more, eagerly and recorded by autograd, with every
    input (arguments and outside tensors such as parameters) as a placeholder, and then
    autograd's own backward is run from a placeholder output gradient while the tracer
    listens. The derivative rules of the op table are Tensor code, so every op they run
    lands in the joint graph after the forward nodes. The forward part (``[0, F)``) and
    the backward part (``[F, end)``) are lowered separately by the same fusion and code
    generation; the forward values the backward reads are exactly the nodes the backward
    part refers to (``fusion.live_after``).

    At run time the compiled forward computes the output and those values; one autograd
    node (``_SEGMENT``) is attached to the output, and its derivative runs the compiled
    backward on the incoming gradient. A backward with ``create_graph=True`` runs the
    backward part through the dispatcher instead, so double backward still works.

Only graphs with one output, no graph breaks and no in-place writes to inputs take this
path; others replay op by op through the dispatcher, which autograd records as usual.
"""

from __future__ import annotations

import numpy as np

from .. import _autograd_hooks, _dispatch
from ..ops.registry import OpDef
from . import layout
from .capture import Tracer, tracing
from .graph import Ref
from .runner import eager_segment, run_node

__all__ = ["supports", "AotSegment"]


def supports(graph) -> bool:
    """Whether ``graph`` can be trained through a joint forward/backward graph."""
    return not graph.breaks and isinstance(graph.outputs, Ref) and not graph.mutations


def _segment_backward(node, grad):
    return node.params[0].backward(grad)


# One synthetic op for every compiled segment; its per-call state rides in ``params``.
_SEGMENT = OpDef("compiled_graph", None, (), False, True, False)
_SEGMENT.derivative(_segment_backward)


class _Call:
    """What one forward call leaves for its backward: the joint graph's values."""

    def __init__(self, segment, env, tensors) -> None:
        self.segment, self.env, self.tensors = segment, env, tensors

    def backward(self, grad):
        seg = self.segment
        if _autograd_hooks.grad_mode.enabled:
            # create_graph: the whole joint graph again through the dispatcher, from the inputs,
            # so that the gradients carry history back to them (double backward).
            env = [None] * len(seg.joint.nodes)
            eager_segment(seg.joint.nodes)(env, self.tensors + [grad])
        else:
            env = list(self.env)  # a second backward (retain_graph=True) starts from the forward values
            env[seg.grad_node] = grad
            seg.backward_fused(env, [])
        return tuple(None if g is None else env[g] for g in seg.input_grads)


class AotSegment:
    """The runner of a whole captured graph when its inputs require grad (see Note [Joint graph])."""

    def __init__(self, graph, lower_range) -> None:
        self.graph = graph
        self.lower_range = lower_range
        self.joint = None
        self.fallback = None  # the op-by-op runner, when the joint graph cannot be captured
        self.consts = [n.value for n in graph.nodes if n.kind == "const"]

    def __call__(self, env, leaves) -> None:
        tensors = self._tensors(leaves)
        if self.joint is None and self.fallback is None:
            self._build(tensors)
        if self.fallback is not None:
            self.fallback(env, leaves)
            return
        joint_env = [None] * len(self.joint.nodes)
        grad_mode = _autograd_hooks.grad_mode  # no_grad without its Python (Note [Cold calls] in codegen_numba.py)
        enabled, grad_mode.enabled = grad_mode.enabled, False
        try:
            self.forward(joint_env, tensors + [None])
        finally:
            grad_mode.enabled = enabled
        out = joint_env[self.out_node]
        result = _dispatch.make(out._data, out._device)
        for t in tensors:
            if t._requires_grad:
                _autograd_hooks.api.record(_SEGMENT, result, tensors, (_Call(self, joint_env, tensors),))
                break
        env[self.graph.outputs.node] = result

    def _tensors(self, leaves) -> list:
        """The joint graph's placeholders: the call's tensor arguments, then the outside tensors."""
        return list(leaves) + self.consts

    def _build(self, tensors) -> None:
        fresh = [_alias(t) for t in tensors]
        with _autograd_hooks.api.enable_grad():
            out = self._eager_forward(fresh)
            if not out._requires_grad:  # e.g. an argmax: nothing to differentiate
                self.fallback = eager_segment(self.graph.nodes)
                return
            grad = _dispatch.make(out._device.backend.xp.ones_like(out._data), out._device)
            tracer = Tracer(fresh + [grad])
            with tracing(tracer):
                out = self._eager_forward(fresh, tracer)
                forward_end = len(tracer.graph.nodes)
                # create_graph keeps every step of the engine on the dispatcher, so it is traced.
                _autograd_hooks.api.run_backward((out,), (grad,), False, True, [t for t in fresh if t._requires_grad])
        joint = tracer.graph
        self.out_node = tracer.node_of(out)
        self.grad_node = len(fresh)
        self.input_grads = [_unclone(joint, tracer.node_of(t.grad)) if t.grad is not None else None for t in fresh]
        lost = any(g is None for g, t in zip(self.input_grads, fresh) if t._requires_grad and t.grad is not None)
        if joint.breaks or tracer.unreplayable or self.out_node is None or lost:
            self.fallback = eager_segment(self.graph.nodes)
            return
        joint.outputs = (Ref(self.out_node), *[Ref(g) for g in self.input_grads if g is not None])
        self.joint = joint
        self.backward_eager = eager_segment(joint.nodes[forward_end:])
        if not self._linear_in_grad(tensors, forward_end, [t.grad for t in fresh]):
            self.fallback = eager_segment(self.graph.nodes)
            return
        self.forward = self.lower_range(joint, 0, forward_end, regions_follow=True)
        self.backward_fused = self.lower_range(joint, forward_end, len(joint.nodes))

    def _linear_in_grad(self, tensors, forward_end, traced) -> bool:
        """Replay the joint graph with twice the output gradient: every input gradient must double.

        A step of the backward that bypassed the dispatcher would be a frozen constant in the
        joint graph; this catches it before it could give a wrong gradient.
        """
        env = [None] * len(self.joint.nodes)
        with _autograd_hooks.api.no_grad():
            eager_segment(self.joint.nodes[:forward_end])(env, tensors + [None])
            out = env[self.out_node]
            env[self.grad_node] = _dispatch.make(out._device.backend.xp.full_like(out._data, 2), out._device)
            self.backward_eager(env, [])
        layout.record(self.joint, env)  # the fused kernels keep these strides (Note [Eager layouts])
        for node, grad in zip(self.input_grads, traced):
            if node is not None and not np.allclose(env[node]._data, 2 * grad._data, rtol=1e-6, atol=1e-12):
                return False
        return True

    def _eager_forward(self, fresh, tracer=None):
        """Run the captured forward through the dispatcher on the placeholders ``fresh``."""
        env, consts = [None] * len(self.graph.nodes), iter(fresh[self._n_leaves() :])
        for node in self.graph.nodes:
            if node.kind == "const":
                env[node.id] = next(consts)
            else:
                run_node(node, env, fresh)
        return env[self.graph.outputs.node]

    def _n_leaves(self) -> int:
        return sum(1 for n in self.graph.nodes if n.kind == "input")


def _unclone(joint, node_id):
    """The value a leaf's ``.grad`` was cloned from (the engine clones again when it accumulates)."""
    while node_id is not None and joint.nodes[node_id].kind == "call" and joint.nodes[node_id].op.name == "clone":
        node_id = joint.nodes[node_id].args[0]
    return node_id


def _alias(t):
    """A leaf sharing ``t``'s storage, requiring grad where ``t`` does."""
    alias = _dispatch.make(t._data, t._device)
    if t._requires_grad:
        alias.requires_grad_(True)
    return alias
