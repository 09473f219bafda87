"""The backward pass: walk the graph from the outputs and apply each node's derivative.

Nodes run in decreasing creation order, which puts every node after all of its
consumers, as in PyTorch, so gradients become ready in (roughly) reverse order
of the forward pass. A leaf accumulates into ``.grad`` as soon as the last edge
into it has run; ``autograd.grad`` captures instead.
"""

from __future__ import annotations

import functools
import operator
import warnings

import tensor
from tensor import _backend, _dispatch
from tensor._autograd_hooks import grad_mode

from ._callbacks import queue_callback
from ._callbacks import queued as _callbacks
from .graph import Node, refresh_view

__all__ = ["run_backward", "grad", "queue_callback"]


def _make_root_grads(outputs, grad_outputs):
    roots = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if not _dispatch.is_tensor(out):
            raise TypeError(f"expected a Tensor as output {i}, got {type(out).__name__}")
        if not out._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        if out._grad_version is not None and out._grad_version != out._version_box[0]:
            refresh_view(out)  # a view whose base was modified in place since it was made
        if g is None:
            if out.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            g = _implicit_grad(out)
        elif not _dispatch.is_tensor(g):
            g = tensor.tensor(g, dtype=out.dtype, device=out.device)
        if g.shape != out.shape:
            raise RuntimeError(
                f"Mismatch in shape: grad_output[{i}] has a shape of {list(g.shape)} and "
                f"output[{i}] has a shape of {list(out.shape)}."
            )
        roots.append((out, g))
    return roots


def _implicit_grad(out):
    """Ones like the one-element ``out``: the gradient ``backward()`` starts from without one.

    Every training step's backward makes one, after a forward that has streamed megabytes
    through the cache, so the whole ``ones_like`` path ran cold: 50-75 us on a 2-core VM
    where this path takes ~10. A traced call (``tensor.compile``) keeps ``ones_like``, so
    that the capture records it."""
    if _dispatch.tracer is not None:
        return tensor.ones_like(out)
    device = out._device
    backend = device.backend
    return _dispatch.make(backend.launch(device.index, backend.xp.ones_like, out._data), device)


def _collect(root_nodes):
    """Every node reachable from the roots, in execution order, and the number of
    edges that lead to each leaf (so a leaf is finished as soon as its last one ran)."""
    nodes = set(root_nodes)
    found = list(nodes)
    leaf_edges: dict = {}
    for node in found:  # breadth-first: the loop reaches the nodes appended while it runs
        fns = node._fns_saved  # next_fns, then the saved inputs: read without a slice
        for i in range(len(node.next_nrs)):
            target = fns[i]
            if type(target) is Node:
                if target not in nodes:
                    nodes.add(target)
                    found.append(target)  # noqa: B909 - the loop is meant to reach it
            elif target is not None:
                leaf_edges[target] = leaf_edges.get(target, 0) + 1
    # A node is always created after its inputs' nodes, so decreasing creation order
    # runs every node after all of its consumers, as PyTorch's engine does. The walk finds
    # them mostly in that order already (a chain exactly), which the sort detects: linear
    # time where sorting a set's arbitrary order was n log n.
    found.sort(key=_creation_order, reverse=True)
    return found, leaf_edges


_creation_order = operator.attrgetter("seq")


def _accumulate(buffers, node, nr, g):
    """Add ``g`` to the gradient of output ``nr`` of ``node`` in ``buffers``: a single-output
    node's (most nodes) is the gradient itself, a multi-output node's a list, one per output."""
    n_outputs = node.n_outputs
    if n_outputs == 1:
        previous = buffers.get(node)
        buffers[node] = g if previous is None else _sum(previous, g)
        return
    slot = buffers.get(node)
    if slot is None:
        slot = buffers[node] = [None] * n_outputs
    slot[nr] = g if slot[nr] is None else _sum(slot[nr], g)


def _sum(a, b):
    # Both already have the input's shape and dtype. Outside create_graph the sum
    # needs no history, so skip the dispatcher.
    if grad_mode.enabled:
        return a + b
    total = a._data + b._data
    if type(total) is not type(a._data):  # numpy makes the sum of two 0-d arrays a scalar
        total = a._device.backend.xp.asarray(total)
    return _dispatch.make(total, a._device)


def _fit(g, shape, dtype):
    # Gradients arrive in the shape and dtype of the op's computation; the input may
    # have been broadcast or promoted. Most need no change: this returns them as they are.
    data = g._data
    if data.shape != shape:
        g = g.sum_to_size(shape)
    if data.dtype != dtype:
        if data.dtype.kind == "c" and dtype.kind != "c":  # a real input of a complex op: dL/dx
            g = g.real
        g = g.to(tensor._dtype.from_numpy_dtype(dtype))
    return g


def _run_hooks(hooks, g):
    """Run a tensor's hooks ``{handle id: hook}`` on its gradient ``g``, each on what the one before
    returned, and return the final gradient.

    Raises:
        TypeError: if a hook returns something other than a Tensor or None.
        RuntimeError: if a hook returns a gradient of another shape, dtype or device, as PyTorch.
    """
    for hook in list(hooks.values()):
        replaced = hook(g)
        if replaced is not None:
            _check_hook_gradient(hook, g, replaced)
            g = replaced
    return g


def _check_hook_gradient(hook, g, replaced) -> None:
    if not _dispatch.is_tensor(replaced):
        raise TypeError(f"expected Variable, but hook returned '{type(replaced).__name__}'")
    if replaced.shape != g.shape:
        raise RuntimeError(f"hook '{_hook_name(hook)}' has changed the size of value")
    if replaced.dtype != g.dtype or replaced.device != g.device:
        raise RuntimeError(
            f"hook '{_hook_name(hook)}' has changed the type of value (was {g.dtype} on {g.device} "
            f"got {replaced.dtype} on {replaced.device})"
        )


def _hook_name(hook) -> str:
    return getattr(hook, "__name__", type(hook).__name__)


def _run_node_hooks(hooks, args, expected):
    """Run a Node's ``register_prehook`` (``args``: the output gradients) or ``register_hook``
    (``args``: the input and output gradients) hooks; return the gradients that replace
    ``args[0]``, a tuple of ``expected``, or None where no hook replaced them.

    Raises:
        TypeError: if a hook returns something other than a tuple or None.
        RuntimeError: if it returns a tuple of the wrong length.
    """
    replaced = None
    for hook in list(hooks.values()):
        result = hook(*args)
        if result is None:
            continue
        if not isinstance(result, tuple):
            raise TypeError(f"expected tuple, but hook returned '{type(result).__name__}'")
        if len(result) != expected:
            raise RuntimeError(f"hook '{_hook_name(hook)}' has returned an incorrect number of values "
                               f"(got {len(result)}, but expected {expected})")
        replaced = result
        args = (result, *args[1:])
    return replaced


def _accumulate_into_leaf(leaf, g, create_graph, claimed=None):
    """Add ``g`` (the leaf's hooks already applied) into ``leaf.grad``. ``claimed`` maps the ids of
    gradient tensors already visible to the user in this backward (roots, other leaves' grads,
    retained grads) to the tensors themselves: holding them keeps their ids from being reused by
    new gradients.

    Raises:
        RuntimeError: if a post-accumulate-grad hook returns something other than None.
    """
    if leaf.grad is None:
        if create_graph:
            leaf.grad = g
        elif claimed is not None and id(g) not in claimed and _backend.owns_fresh_memory(g._data):
            # A gradient that nothing else holds can become .grad as it is (no copy).
            leaf.grad = g.detach()
        else:
            # Optimizers update .grad in place, so it needs its own contiguous storage.
            leaf.grad = g.detach().clone().contiguous()
        if claimed is not None:
            claimed[id(g)] = g
    elif create_graph:
        leaf.grad = leaf.grad + g
    else:
        leaf.grad._data += g._data
    if leaf._post_accumulate_hooks:
        for hook in list(leaf._post_accumulate_hooks.values()):
            if hook(leaf) is not None:
                raise RuntimeError("Tensor post accumulate grad hooks should return None.")


def _execute(roots, retain_graph, create_graph, capture=None, accumulate_leaves=True):
    """Propagate gradients from ``roots`` [(output, grad)].

    ``capture`` maps id(tensor) -> slot for ``autograd.grad``: the gradient that
    reaches each of those tensors is stored there instead of (or as well as)
    being accumulated.
    """
    buffers: dict = {}
    leaf_grads: dict = {}
    root_nodes = []
    for out, g in roots:
        if out._grad_fn is None:
            previous = leaf_grads.get(out)
            leaf_grads[out] = g if previous is None else previous + g
        else:
            _accumulate(buffers, out._grad_fn, out._output_nr, g)
            root_nodes.append(out._grad_fn)
    order, leaf_edges = _collect(root_nodes)
    finish = _LeafFinisher(leaf_grads, leaf_edges, capture, accumulate_leaves, create_graph)
    for _, g in roots:
        finish.claimed[id(g)] = g
    previous_mode = grad_mode.enabled
    grad_mode.enabled = create_graph
    outer_queue, _callbacks.queue = getattr(_callbacks, "queue", None), []
    run_node = None  # the plain _run_node, called directly (a C call in the compiled engine)
    if tensor.is_anomaly_enabled() and tensor.is_anomaly_check_nan_enabled():
        run_node = _run_node_checking_nan
    if _dispatch.profiler is not None:  # tensor.profiler times each node and links it to its forward op
        if run_node is None:
            run_node = _run_node
        run_node = functools.partial(_dispatch.profiler.run_node, run_node)
    try:
        for node in order:
            grads = buffers.pop(node, None)
            if grads is None:
                finish.skip(node)  # no gradient reached this node
                continue
            if run_node is None:
                _run_node(node, grads, buffers, finish, capture)
            else:
                run_node(node, grads, buffers, finish, capture)
            if not retain_graph:
                node.release()
        finish.remaining()
        queued = _callbacks.queue
        while queued:  # a callback may queue another
            queued.pop(0)()
    finally:
        _callbacks.queue = outer_queue
        grad_mode.enabled = previous_mode


class _LeafFinisher:
    """Accumulates a leaf's gradient into ``.grad`` as soon as the last edge into it has run,
    so post-accumulate-grad hooks fire during backward (data-parallel overlap relies on it)."""

    def __init__(self, leaf_grads, leaf_edges, capture, accumulate_leaves, create_graph) -> None:
        self.grads = leaf_grads
        self.pending = leaf_edges
        self.capture = capture
        self.accumulate_leaves = accumulate_leaves
        self.create_graph = create_graph
        self.claimed: dict = {}
        self.summed: set = set()  # leaves whose gradient so far is a sum made here, seen by nobody

    def add(self, leaf, g) -> None:
        """One edge into ``leaf`` ran, carrying ``g`` (possibly None)."""
        if g is not None:
            previous = self.grads.get(leaf)
            if previous is None:
                self.grads[leaf] = g
            elif leaf in self.summed:  # our own array: add in place (a leaf used by every op of a chain)
                previous._data += g._data
            else:
                self.grads[leaf] = _sum(previous, g)
                if not self.create_graph:
                    self.summed.add(leaf)
        left = self.pending[leaf] - 1
        self.pending[leaf] = left
        if left == 0:
            self._finish(leaf)

    def skip(self, node) -> None:
        """``node`` got no gradient: its edges into leaves carry none either."""
        for target in node.next_fns:
            if target is not None and type(target) is not Node:
                self.add(target, None)

    def remaining(self) -> None:
        """Finish leaves that were roots themselves."""
        for leaf in list(self.grads):
            self._finish(leaf)

    def _finish(self, leaf) -> None:
        g = self.grads.pop(leaf, None)
        if g is None:
            return
        capture = self.capture
        captured = capture is not None and id(leaf) in capture
        if not (captured or self.accumulate_leaves):
            return
        if leaf._hooks:  # they run for autograd.grad too, as PyTorch's
            g = _run_hooks(leaf._hooks, g)
        if captured:
            _add_to_slot(capture[id(leaf)], g)
        if self.accumulate_leaves:
            _accumulate_into_leaf(leaf, g, self.create_graph, self.claimed)


def _run_node(node, grads, buffers, finish, capture, check_nan=False):
    """Apply ``node``'s derivative to ``grads`` (its output's gradient, or a list with one per
    output: see ``_accumulate``) and pass each input's gradient on: into the buffer of the node
    that made the input, or to the leaf.

    Raises:
        RuntimeError: if the derivative returns the wrong number of gradients, or (``check_nan``,
            anomaly mode) a gradient holding NaN.
    """
    single = node.n_outputs == 1
    extras = node._extras
    if extras is not None or capture is not None:  # hooks, retained gradients or a ctx
        grads = [grads] if single else grads
        _before_derivative(node, grads, finish, capture)
        grads = grads[0] if single else grads
    fns = node._fns_saved  # next_fns, then the saved inputs
    nrs = node.next_nrs
    n = len(nrs)
    input_grads = node.op.backward(node, grads if single else tuple(grads))
    if len(input_grads) != n:
        raise RuntimeError(
            f"function {node.name()} returned an incorrect number of gradients (expected {n}, got {len(input_grads)})"
        )
    if extras is not None and extras.post_hooks:
        replaced = _run_node_hooks(extras.post_hooks, (tuple(input_grads), (grads,) if single else tuple(grads)), n)
        if replaced is not None:
            input_grads = replaced
    if check_nan:
        _check_no_nan(node, input_grads)
    for i in range(n):  # indexed, not zipped: the compiled engine reads the tuples directly
        target = fns[i]
        if target is None:
            continue
        g = input_grads[i]
        if type(target) is Node:
            if g is not None:
                producer = target  # typed Node in the compiled engine (engine.pxd)
                nr = nrs[i]
                shape, dtype = producer.out_meta[nr]
                data = g._data
                if data.shape != shape or (data.dtype is not dtype and data.dtype != dtype):
                    g = _fit(g, shape, dtype)
                _accumulate(buffers, producer, nr, g)
        else:
            finish.add(target, None if g is None else _fit(g, target._data.shape, target._data.dtype))


def _run_node_checking_nan(node, grads, buffers, finish, capture):
    """``_run_node`` in anomaly mode (``autograd.detect_anomaly``)."""
    _run_node(node, grads, buffers, finish, capture, check_nan=True)


def _check_no_nan(node, input_grads) -> None:
    """Raise RuntimeError, as PyTorch's anomaly mode does, if a gradient ``node`` returned holds NaN
    (one host sync per gradient: anomaly mode is for debugging)."""
    for i, g in enumerate(input_grads):
        if g is not None and (g.is_floating_point() or g.is_complex()) and bool(g.isnan().any().item()):
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")


def _before_derivative(node, grads, finish, capture) -> None:
    """Run ``node``'s pre-hooks on ``grads`` (replacing them in the list), then hand them to the
    tensors that retain their gradient and to ``autograd.grad``'s capture."""
    pre_hooks = node.pre_hooks
    if pre_hooks:
        for nr, hooks in pre_hooks.items():
            if hooks and grads[nr] is not None:
                grads[nr] = _run_hooks(hooks, grads[nr])
    retained = node.retained
    if retained is not None:
        for nr, ref in list(retained.items()):
            owner, g = ref(), grads[nr]
            if owner is not None and g is not None:
                owner.grad = g if owner.grad is None else owner.grad + g
                finish.claimed[id(g)] = g
    if capture is not None:
        for nr, g in enumerate(grads):
            slot = capture.get((id(node), nr))
            if slot is not None and g is not None:
                _add_to_slot(slot, g)
    extras = node._extras
    if extras is not None and extras.node_pre_hooks:
        replaced = _run_node_hooks(extras.node_pre_hooks, (tuple(grads),), len(grads))
        if replaced is not None:
            grads[:] = replaced


def _add_to_slot(slot, g) -> None:
    slot[0] = g if slot[0] is None else slot[0] + g


def run_backward(outputs, grad_outputs, retain_graph, create_graph, inputs=None) -> None:
    """``Tensor.backward`` / ``autograd.backward``: accumulate into the leaves' ``.grad``."""
    roots = _make_root_grads(outputs, grad_outputs)
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is None:
        _execute(roots, retain_graph, create_graph)
        return
    inputs = [inputs] if _dispatch.is_tensor(inputs) else list(inputs)
    if not inputs:
        raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    captured = grad(outputs, inputs, [g for _, g in roots], retain_graph, create_graph, allow_unused=True)
    for leaf, g in zip(inputs, captured):
        if g is not None:
            _accumulate_into_leaf(leaf, g, create_graph)


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph=None,
    create_graph=False,
    only_inputs=True,
    allow_unused=None,
    is_grads_batched=False,
    materialize_grads=False,
):
    """The gradients of ``outputs`` with respect to ``inputs``, without touching ``.grad``. With
    ``is_grads_batched``, the first dim of every ``grad_outputs`` is a batch of seeds and each
    result gets that dim too (PyTorch vectorises it with vmap; here it is a loop over the seeds).
    ``only_inputs`` is deprecated and ignored, as in PyTorch (False warns).

    Raises:
        RuntimeError: if ``inputs`` is empty, an input does not require grad, or one was not
            used in the graph and ``allow_unused`` is False.
        ValueError: for ``allow_unused=False`` with ``materialize_grads=True``.
    """
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). To accumulate "
                      "gradient for other parts of the graph, please use autograd.backward.", FutureWarning,
                      stacklevel=2)
    outputs = [outputs] if _dispatch.is_tensor(outputs) else list(outputs)
    single_input = _dispatch.is_tensor(inputs)
    inputs = [inputs] if single_input else list(inputs)
    if not inputs:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    elif _dispatch.is_tensor(grad_outputs):
        grad_outputs = [grad_outputs]
    if is_grads_batched:
        return _batched_grad(outputs, inputs, list(grad_outputs), retain_graph, create_graph, allow_unused,
                             materialize_grads)
    if allow_unused is None:
        allow_unused = materialize_grads
    if retain_graph is None:
        retain_graph = create_graph
    capture = {}
    for i, t in enumerate(inputs):
        if not t._requires_grad:
            raise RuntimeError(f"One of the differentiated Tensors (input {i}) does not require grad")
        capture.setdefault(_capture_key(t), [None])
    roots = _make_root_grads(outputs, list(grad_outputs))
    _execute(roots, retain_graph, create_graph, capture, accumulate_leaves=False)
    results = []
    for i, t in enumerate(inputs):
        g = capture[_capture_key(t)][0]
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    f"One of the differentiated Tensors (input {i}) appears to not have been "
                    "used in the graph. Set allow_unused=True if this is the desired behavior."
                )
            if materialize_grads:
                g = tensor.zeros_like(t)
        elif not create_graph:
            g = g.detach()
        results.append(g)
    return tuple(results)


def _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize_grads):
    """``grad`` for each seed along the first dim of the ``grad_outputs``, stacked.

    Raises:
        RuntimeError: for a missing seed or seeds of different batch sizes.
    """
    if any(g is None for g in grad_outputs):
        raise RuntimeError("is_grads_batched=True needs a grad_output for every output")
    sizes = {g.shape[0] if g.ndim else None for g in grad_outputs}
    if len(sizes) != 1 or None in sizes:
        raise RuntimeError(f"is_grads_batched=True needs grad_outputs with one batch dim of the same size, "
                           f"got shapes {[tuple(g.shape) for g in grad_outputs]}")
    (count,) = sizes
    per_seed = [grad(outputs, inputs, [g[k] for g in grad_outputs], retain_graph=retain_graph or k < count - 1,
                     create_graph=create_graph, allow_unused=allow_unused, materialize_grads=materialize_grads)
                for k in range(count)]
    return tuple(None if results[0] is None else tensor.stack(results) for results in zip(*per_seed))


def _capture_key(t):
    """Where the gradient reaching ``t`` is captured: the leaf itself, or its node's output."""
    return id(t) if t._grad_fn is None else (id(t._grad_fn), t._output_nr)
