"""The recorded graph: nodes, how ops record them, and hooks on tensors.

Each recorded op creates one ``Node``. It points to the nodes of its inputs
through ``next_fns``/``next_nrs`` (node and output number, or the leaf tensor and 0
for a leaf that accumulates into ``.grad``; ``next_edges`` pairs them), and keeps
only what the op's derivative rule reads: the saved inputs, and the output's
storage when ``saves_output`` (kept as the raw array to avoid a reference cycle
between the output and its node). ``next_fns`` and the saved inputs are one tuple,
``_fns_saved`` (Note [Graphs and the cyclic GC]).

Note [Graphs and the cyclic GC]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A graph is acyclic: a node refers only to older nodes, leaves and saved inputs (never to
its own output tensor), so reference counting frees it, with no help from the cyclic
collector (tests/autograd/test_graph_gc.py). But every node still has to be *tracked* by
that collector (a Python object with references always is), and a long chain of recorded
ops that stays alive is traversed by each full collection, which CPython starts whenever
the tracked objects grew by 25% (and every full collection traverses the whole heap, so
each tracked object left per op costs time in proportion to everything else alive). So a
live graph leaves few tracked objects behind:

* A saved input is kept as ``(array, version counter, version)``, not as its Tensor:
  ``Node.saved`` rebuilds the tensors (a leaf that requires grad is returned itself, and a
  non-leaf gets its history back from the node's edge to it). The intermediate tensors of
  a chain are then freed as soon as the user drops them, as in PyTorch. A tensor whose
  owner swaps its array (FSDP's full parameters) opts out with ``save_by_reference``.
* A version counter is a ``{0: version}`` dict, which the collector does not track (a dict
  holding only atomic values never is), where a ``[version]`` list always was.
* The output numbers are a shared all-zero tuple unless an input is a later output of a
  multi-output node; ``out_meta`` holds only atomic values, so the collector stops tracking
  it the first time it sees it, and ``record`` shares one per output shape (``_OUT_META``).
* The edges and the saved inputs are one tuple, ``_fns_saved``: ``next_fns`` (one per input),
  then a triple per saved input (``next_fns`` is a property slicing it; the engine and hot
  derivative rules index it). What a node seldom has (pre-hooks, retained gradients, a custom
  Function's ctx) lives in a ``_NodeExtras`` made on first use, behind one slot.

Measured on a live chain of ``y = y * c`` (tests/autograd/test_graph_gc.py): tracked
objects per op after full collections went from 7 to 5 to 3 to 2 (the node and its
``_fns_saved``). An instance of a Python class, and a tuple holding one, always are
tracked, so plain Python stops there. Each op also costs memory that a long chain finds
cold in the caches (BENCHMARKS.md, issue 19, the long chains): a live ``y * c`` keeps 2
allocator blocks, 224 bytes, compiled (the node in the 128-byte size class, its C fields
``seq``, ``n_outputs`` and ``freed`` sharing 16 bytes; its ``_fns_saved``) where it kept 3,
296 bytes, and 3 blocks in plain Python (its ``seq`` an int object), tests/autograd/
test_graph_memory.py. ``release`` after a backward drops the saved triples; compiled, it
replaces them by None in place when only the node holds the tuple (``_drop_saved_in_place``).

Compiled (Note [Compiled dispatch and graph] in tensor/_accelerator.py), ``Node`` is an
extension type and ``record`` untracks the node and its tuples (``_untrack``): 0 tracked
objects per op. That is safe only while no reference cycle can close through the node, so
it keeps a node tracked when it refers to a tensor that requires grad (a leaf, whose hooks
could refer back, or an intermediate saved by reference), and ``_track`` gives a node back
to the collector when it gets hooks or a retained gradient (``_NodeExtras``); a custom
Function's node (its ctx holds anything) is never untracked. What remains uncollected: a cycle closed by a hook
or ctx on one node that holds a tensor computed later from it, through untracked nodes
between them (README, "The compiled accelerator").
"""

from __future__ import annotations

import itertools
import threading
import weakref

from tensor import Tensor, _dispatch
from tensor._backend import cpu_backend
from tensor._tensor_base import TensorBase
from tensor.ops.shape import replay_view, view_scatter

# Whether this is the module setup.py compiled (Note [Compiled dispatch and graph]); not Cython's
# ``cython.compiled``, whose ``import cython`` would load Cython's shadow module in plain Python.
_COMPILED = not __file__.endswith(".py")

__all__ = [
    "Node",
    "record",
    "rebase_history",
    "register_hook",
    "register_post_accumulate_grad_hook",
    "retain_grad",
    "RemovableHandle",
    "save_by_reference",
    "saved_tensors_hooks",
    "save_on_cpu",
    "disable_saved_tensors_hooks",
    "register_multi_grad_hook",
    "GradientEdge",
    "get_gradient_edge",
    "increment_version",
]

_sequence = itertools.count()
# The output numbers of a node's inputs are almost always all 0: one shared tuple per arity.
_ZERO_NRS = {n: (0,) * n for n in range(8)}
# One ``out_meta`` per output shape, shared by the nodes whose output has that shape and dtype
# (the latest dtype seen for a shape): a live node keeps no tuples of its own for it. Bounded;
# emptied when full.
_OUT_META = {}
_HOST_ARRAY = cpu_backend.array_type  # numpy's ndarray: record reads its dtype from its struct
_OUT_META_LIMIT = 4096
_FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved intermediate "
    "values after calling backward."
)


class _NodeExtras:
    """What few nodes have, kept out of every node's own slots: the hooks of the tensors it made
    (``pre_hooks``), the weak references of outputs that retain their gradient, a custom
    Function's ctx, the Node API's ``register_prehook``/``register_hook`` hooks and ``metadata``,
    and the unpack hook of the tensors it saved under ``saved_tensors_hooks``."""

    __slots__ = ("pre_hooks", "retained", "ctx", "node_pre_hooks", "post_hooks", "metadata", "unpack")

    def __init__(self) -> None:
        self.pre_hooks = self.retained = self.ctx = None
        self.node_pre_hooks = self.post_hooks = self.metadata = self.unpack = None


class Node:
    """One recorded op: what its derivative needs, and edges to its inputs' nodes."""

    __slots__ = (
        "op",
        "params",
        "_fns_saved",
        "_device",
        "_out",
        "next_nrs",
        "out_meta",
        "_extras",
        "seq",
        "n_outputs",
        "freed",
        "__weakref__",
    )

    def __init__(self, op, params, inputs, n_outputs=1):
        _link(self, op, params, inputs, n_outputs)

    @property
    def next_fns(self) -> tuple:
        """One per input: the node that made it, the leaf tensor itself (its gradient accumulates
        into ``.grad``), or None where no gradient flows."""
        fns_saved = self._fns_saved
        n = len(self.next_nrs)
        return fns_saved if len(fns_saved) == n else fns_saved[:n]

    @property
    def pre_hooks(self):
        """``{output_nr: {handle id: hook}}`` of ``register_prehook``, or None."""
        extras = self._extras
        return None if extras is None else extras.pre_hooks

    @property
    def retained(self):
        """``{output_nr: weak reference}`` of the outputs that retain their gradient, or None."""
        extras = self._extras
        return None if extras is None else extras.retained

    @property
    def ctx(self):
        """A custom Function's ctx (``autograd.function``), or None."""
        extras = self._extras
        return None if extras is None else extras.ctx

    @ctx.setter
    def ctx(self, value) -> None:
        self._made_extras().ctx = value

    def _made_extras(self) -> _NodeExtras:
        """The node's ``_NodeExtras``, made on first use (a node given hooks or a ctx)."""
        if self._extras is None:
            self._extras = _NodeExtras()
        return self._extras

    @property
    def next_edges(self) -> tuple:
        """One ``(node, output_nr)`` or ``(leaf_tensor, 0)`` per input; None where no gradient flows."""
        return tuple([None if fn is None else (fn, nr) for fn, nr in zip(self.next_fns, self.next_nrs)])

    @property
    def needs_input_grad(self) -> list:
        """One bool per input: whether its gradient is needed."""
        return [fn is not None for fn in self.next_fns]

    @property
    def input_meta(self) -> list:
        """(shape, numpy dtype) of each input that requires grad (None for the others)."""
        return [None if e is None else edge_meta(e) for e in self.next_edges]

    @property
    def input_shapes(self) -> list:
        """The shapes of the inputs that require grad (None for the others)."""
        return [None if e is None else edge_meta(e)[0] for e in self.next_edges]

    @property
    def saved(self) -> tuple:
        """The inputs the derivative reads, checked against in-place modification.

        Raises:
            RuntimeError: if the graph was freed by an earlier backward, or a saved
                tensor was modified in place since it was saved.
        """
        if self.freed:
            raise RuntimeError(_FREED_MESSAGE)
        saved = self._fns_saved
        n = len(self.next_nrs)
        unpack = None if self._extras is None else self._extras.unpack
        tensors = []
        for k in range(n, len(saved), 3):
            item, box, version = saved[k], saved[k + 1], saved[k + 2]
            if box is not None and box[0] != version:
                raise self._modified_input(k)
            if box is not None and unpack is not None:
                item = _unpacked(unpack, item)
                if type(saved[self._saved_position(k)]) is Node:
                    item = item._data  # an intermediate: given its history back below
            if box is not None and not isinstance(item, Tensor):
                # An intermediate kept as its array: a Tensor again, with its history (from the
                # edge to it), for derivatives that are differentiated again.
                position = self._saved_position(k)
                t = _dispatch.make(item, self._device, box)
                t._grad_fn, t._requires_grad = saved[position], True
                nr = self.next_nrs[position]
                if nr:
                    t._output_nr = nr
                item = t
            tensors.append(item)
        return tuple(tensors)

    def _saved_position(self, k) -> int:
        """The input position of the saved input whose triple starts at ``_fns_saved[k]``."""
        j = (k - len(self.next_nrs)) // 3
        saves = self.op.saves
        return j if saves is None else saves[j]

    @property
    def output(self):
        """The op's output, as a tensor that carries this node as its history."""
        data = self.output_data
        out = _dispatch.make(data, self._out[1], self._out[2])
        out._grad_fn = self
        out._requires_grad = True
        return out

    @property
    def saved_data(self) -> tuple:
        """``saved`` as arrays (a non-tensor input as itself), checked the same way but without
        making Tensors: for derivatives that compute on arrays when nothing is recorded (a
        backward without ``create_graph``).

        Raises:
            RuntimeError: as ``saved``.
        """
        return _saved_arrays(self)

    @property
    def output_data(self):
        """``output``'s array, checked the same way (see ``saved_data``).

        Raises:
            RuntimeError: as ``output``.
        """
        if self.freed:
            raise RuntimeError(_FREED_MESSAGE)
        data, _, box, version = self._out
        if self._extras is not None and self._extras.unpack is not None:
            data = _unpacked(self._extras.unpack, data)._data
        if box[0] != version:
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: output 0 of {self.name()} is at version {box[0]}; expected "
                f"version {version} instead. Hint: clone() the tensor before modifying it in place."
            )
        return data

    def _modified_input(self, k) -> RuntimeError:
        """The error for the saved input whose triple starts at ``_fns_saved[k]``, modified in place
        since it was saved."""
        saved = self._fns_saved
        item, box, version = saved[k], saved[k + 1], saved[k + 2]
        t = item if isinstance(item, Tensor) else _dispatch.make(item, self._device, box)
        return RuntimeError(
            "one of the variables needed for gradient computation has been modified by "
            f"an inplace operation: [{t.dtype.name} {list(t.shape)}], which is input {(k - len(self.next_nrs)) // 3} "
            f"saved by {self.name()}, is at version {box[0]}; expected version {version} "
            "instead. Hint: clone() the tensor before modifying it in place."
        )

    def name(self) -> str:
        """PyTorch-style name, e.g. ``MulBackward0``."""
        return self.op.grad_fn_name

    @property
    def next_functions(self) -> tuple:
        """PyTorch's ``next_functions``: one ``(node, output_nr)`` per input, the node being the
        Node that made the input, an ``AccumulateGrad`` for a leaf that requires grad, or None
        where no gradient flows. Made on each call from the node's edges."""
        return tuple([(_function_of(fn), nr) for fn, nr in zip(self.next_fns, self.next_nrs)])

    @property
    def metadata(self) -> dict:
        """A dict for the user's annotations of this node (empty until written)."""
        extras = self._made_extras()
        if extras.metadata is None:
            extras.metadata = {}
            _track(self)
        return extras.metadata

    def register_prehook(self, hook) -> RemovableHandle:
        """Run ``hook(grad_outputs)`` before the derivative, with the tuple of the gradients of this
        node's outputs (None where none arrived); a tuple it returns replaces them, as PyTorch's.

        The backward raises TypeError if the hook returns something other than a tuple or None,
        RuntimeError if the tuple has the wrong length.
        """
        return RemovableHandle(self._hook_store("node_pre_hooks"), hook)

    def register_hook(self, hook) -> RemovableHandle:
        """Run ``hook(grad_inputs, grad_outputs)`` after the derivative, with the tuples of the
        gradients it computed for the inputs and of those it received; a tuple it returns replaces
        ``grad_inputs``, as PyTorch's.

        The backward raises TypeError if the hook returns something other than a tuple or None,
        RuntimeError if the tuple has the wrong length.
        """
        return RemovableHandle(self._hook_store("post_hooks"), hook)

    def _hook_store(self, kind: str) -> dict:
        """The node's ``{handle id: hook}`` of ``kind`` (a ``_NodeExtras`` slot), made on first use."""
        extras = self._made_extras()
        store = getattr(extras, kind)
        if store is None:
            store = {}
            setattr(extras, kind, store)
            _track(self)
        return store

    def _register_tensor_hook(self, hook, output_nr: int) -> RemovableHandle:
        """``Tensor.register_hook`` of output ``output_nr``: ``hook(grad)`` before the derivative."""
        return RemovableHandle(self._hook_store("pre_hooks").setdefault(output_nr, {}), hook)

    def release(self) -> None:
        """Free what backward needed (called after a backward without ``retain_graph``)."""
        self.freed = True
        n = len(self.next_nrs)
        if len(self._fns_saved) > n and not (_COMPILED and _drop_saved_in_place(self, n)):  # noqa: F821
            self._fns_saved = self._fns_saved[:n]  # the edges stay (``next_functions`` after a backward)
        self._out = None
        if self._extras is not None and self._extras.ctx is not None:
            self._extras.ctx.free_saved()  # a custom Function's ctx stays: a backward without saves runs again

    def __repr__(self) -> str:
        return f"<{self.name()}>"


def _saved_arrays(node) -> tuple:
    """``node.saved_data`` (a C function with a C loop when compiled)."""
    if node.freed:
        raise RuntimeError(_FREED_MESSAGE)
    if node._extras is not None and node._extras.unpack is not None:  # saved under saved_tensors_hooks
        return tuple([t._data if isinstance(t, TensorBase) else t for t in node.saved])
    saved = node._fns_saved
    arrays = []
    for k in range(len(node.next_nrs), len(saved), 3):
        item, box = saved[k], saved[k + 1]
        if box is not None:
            if box[0] != saved[k + 2]:
                raise node._modified_input(k)
            if isinstance(item, TensorBase):
                item = item._data
        arrays.append(item)
    return tuple(arrays)


class AccumulateGrad:
    """What ``next_functions`` shows for a leaf that requires grad, as PyTorch's: the gradient
    reaching it accumulates into ``variable.grad``. One per leaf while it is referenced."""

    __slots__ = ("variable", "metadata", "__weakref__")
    next_functions = ()

    def __init__(self, variable: Tensor) -> None:
        self.variable = variable
        self.metadata = {}

    def name(self) -> str:
        """PyTorch's name of the node: ``torch::autograd::AccumulateGrad``."""
        return "torch::autograd::AccumulateGrad"

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {id(self):#x}>"


# id(leaf) -> its AccumulateGrad, alive as long as someone holds that: it holds the leaf, so an id
# in here is never reused by another tensor.
_accumulators: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def _function_of(target):
    """The Node API's view of an edge's target: a Node as itself, a leaf as its AccumulateGrad."""
    if target is None or type(target) is Node:
        return target
    accumulator = _accumulators.get(id(target))
    if accumulator is None:
        accumulator = _accumulators[id(target)] = AccumulateGrad(target)
    return accumulator


def save_by_reference(t: Tensor) -> None:
    """Make ops recorded from now on save ``t`` itself, not its array, when their derivative
    reads it (Note [Graphs and the cyclic GC] explains why intermediates are saved as arrays).

    For tensors whose owner replaces their array while a graph holds them: FSDP frees a
    unit's full parameters after its forward by swapping in an empty array and gives them
    their values back before the backward (Note [FSDP unit lifecycle] in
    distrib/fsdp/_fully_shard.py). A saved array would keep the freed memory alive, as a
    saved tensor sharing its storage does not in PyTorch.
    """
    t._saved_by_reference = True


def _refuse_inference_tensor():
    # Recording happens outside inference mode only: Note [Inference tensors] in tensor/_grad_state.py.
    raise RuntimeError(
        "Inference tensors cannot be saved for backward. Please do not use Tensors created in inference "
        "mode in computation tracked by autograd. To work around this, you can make a clone to get a "
        "normal tensor and use it in autograd, or use `tensor.no_grad()` instead of `tensor.inference_mode()`."
    )


def _link(node, op, params, inputs, n_outputs) -> bool:
    """Fill in a new ``node``: its edges to the inputs' nodes and what its derivative reads.

    Returns whether the node may leave the cyclic GC's tracking: it refers to no tensor that
    requires grad (a leaf, or an intermediate saved by reference), only to older nodes.
    """
    # This runs for every recorded op, so it is written for speed (one pass over the inputs
    # when the op saves all of them, into one list sized up front), and it keeps few tracked
    # objects and allocator blocks: see Note [Graphs and the cyclic GC]. ``_fns_saved`` is one
    # tuple: ``next_fns`` (one per input), then a triple per saved input, (item, version
    # counter, version): the item is the array of an intermediate tensor (not the Tensor), or
    # the tensor (leaf, or needs no gradient), or the value of a non-tensor with None, None.
    node.op = op
    node.params = params
    node.n_outputs = n_outputs
    node._out = node._extras = None
    node.freed = False
    saves = op.saves
    saved_for = op.saved_for
    n = len(inputs)
    save_all = (saves is None or len(saves) == n) and saved_for is None
    items = [None] * (n + 3 * (n if save_all else len(saves)))
    device = None
    numbered = False  # whether an input is a node's output other than its first
    untrackable = True
    k = n  # where the next saved triple goes
    for i in range(n):
        x = inputs[i]
        if not isinstance(x, TensorBase):  # TensorBase: a C type check when compiled
            if save_all:
                items[k] = x  # (x, None, None)
                k += 3
            continue
        t = x
        if device is None:
            device = t._device
        item = t
        if t._requires_grad:
            if t._grad_version is not None and t._grad_version != t._version_box[0]:
                refresh_view(t)
            fn = t._grad_fn
            if fn is None:  # a leaf: its gradient accumulates into .grad
                items[i] = t
                untrackable = False
            else:
                items[i] = fn
                numbered = numbered or t._output_nr != 0
                if t._saved_by_reference:
                    untrackable = False
                else:
                    item = t._data
        if save_all:
            if t._is_inference:
                _refuse_inference_tensor()
            box = t._version_box
            items[k] = item
            items[k + 1] = box
            items[k + 2] = box[0]
            k += 3
    if not save_all:  # some inputs, in increasing order
        for j in range(len(saves)):
            i = saves[j]
            x = inputs[i]
            if saved_for is not None and saved_for[j] is not None and items[saved_for[j]] is None:
                pass  # (None, None, None): only a gradient nobody needs reads it
            elif isinstance(x, TensorBase):
                t = x
                if t._is_inference:
                    _refuse_inference_tensor()
                box = t._version_box
                items[k] = t._data if type(items[i]) is Node and not t._saved_by_reference else t
                items[k + 1] = box
                items[k + 2] = box[0]
            else:
                items[k] = x  # (x, None, None)
            k += 3
    node._device = device
    node._fns_saved = tuple(items)
    node.next_nrs = _output_nrs(inputs) if numbered else _ZERO_NRS.get(n) or (0,) * n
    # Numbered after refresh_view() above may have made nodes for the inputs: a node
    # must come after every node it points to (the engine runs them in this order).
    node.seq = next(_sequence)
    return untrackable


def _untrack(node) -> None:
    """Take a compiled ``node`` and its tuples out of the cyclic GC's tracking (Note [Graphs and
    the cyclic GC]); only for a node whose ``_link`` said so, before it has hooks or a ctx."""
    PyObject_GC_UnTrack(node)  # noqa: F821 (declared in graph.pxd)
    PyObject_GC_UnTrack(node._fns_saved)  # noqa: F821
    if node._out is not None:
        PyObject_GC_UnTrack(node._out)  # noqa: F821
    PyObject_GC_UnTrack(node.out_meta)  # noqa: F821
    PyObject_GC_UnTrack(node.out_meta[0])  # noqa: F821


def _track(node) -> None:
    """Give a node back to the cyclic GC's tracking: from now on it may hold objects (hooks, a
    retained tensor's weak reference) that close a reference cycle through it."""
    if _COMPILED and not PyObject_GC_IsTracked(node):  # noqa: F821
        PyObject_GC_Track(node)  # noqa: F821


def _output_nrs(inputs) -> tuple:
    """The output number of each input in the node that made it (0 for leaves and non-tensors)."""
    return tuple([t._output_nr if isinstance(t, Tensor) and t._grad_fn is not None else 0 for t in inputs])


class RemovableHandle:
    """Returned by hook registration; ``remove()`` unregisters the hook."""

    _ids = itertools.count()

    def __init__(self, store: dict, hook) -> None:
        self._store = store
        self.id = next(self._ids)
        store[self.id] = hook

    def remove(self) -> None:
        """Unregister the hook (idempotent)."""
        self._store.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


def edge_meta(edge) -> tuple:
    """(shape, numpy dtype) of the tensor an edge leads to: a leaf, or a node's output."""
    target, nr = edge
    if type(target) is Node:
        return target.out_meta[nr]
    data = target._data
    return data.shape, data.dtype


def record(op, out, inputs, params) -> Node:
    """Attach a node for ``op`` to ``out``; called by the dispatcher when recording."""
    node = Node.__new__(Node)  # without Node.__init__'s extra frame: this runs for every recorded op
    untrackable = _link(node, op, params, inputs, 1)
    data = out._data
    shape = data.shape
    dtype = array_dtype(data, _HOST_ARRAY) if _COMPILED else data.dtype  # noqa: F821 (C, tensor/_host_arrays.pxd)
    meta = _OUT_META.get(shape)
    if meta is None or meta[0][1] is not dtype:  # a builtin numpy dtype is one object
        if len(_OUT_META) >= _OUT_META_LIMIT:
            _OUT_META.clear()
        meta = _OUT_META[shape] = ((shape, dtype),)
    node.out_meta = meta
    if op.is_view:
        out._grad_version = out._version_box[0]
    if op.saves_output:
        node._out = (out._data, out._device, out._version_box, out._version_box[0])
    if _saved_hooks_entered and _pack_saved(node, inputs, out):  # one check: Note [Saved tensors hooks]
        untrackable = False
    if _COMPILED and untrackable:
        _untrack(node)
    out._grad_fn = node
    out._requires_grad = True
    return node


def rebase_history(tensor, result) -> None:
    """Give ``tensor``, just modified in place with ``result``'s values, ``result``'s history.

    For a view, the base's history is rewritten instead (the view region now
    comes from ``result``), and the view is re-derived from the new base, as
    PyTorch's CopySlices does.
    """
    base = tensor._base
    if base is None:
        _set_history(tensor, result._grad_fn, result._output_nr)
        return
    chain = _view_chain(tensor)
    old_base = _dispatch.make(base._data, base._device, base._version_box)
    old_base._grad_fn, old_base._output_nr = base._grad_fn, base._output_nr
    old_base._requires_grad = base._requires_grad
    new_base = view_scatter(old_base, result, chain)
    _set_history(base, new_base._grad_fn, 0)
    _set_history(tensor, replay_view(base, chain)._grad_fn, 0)
    tensor._grad_version = tensor._version_box[0]


def _set_history(tensor, grad_fn, output_nr) -> None:
    """Make output ``output_nr`` of ``grad_fn`` the history of ``tensor`` (modified in place); a
    retained gradient is from now on the current value's, as PyTorch's."""
    old_fn, old_nr = tensor._grad_fn, tensor._output_nr
    tensor._grad_fn, tensor._output_nr, tensor._requires_grad = grad_fn, output_nr, True
    if tensor._retains_grad:
        retained = None if old_fn is None else old_fn.retained
        if retained is not None and old_nr in retained and retained[old_nr]() is tensor:
            del retained[old_nr]
        retain_grad(tensor)


def refresh_view(view) -> None:
    """Re-derive the history of a view whose base was modified in place after the view was made.

    The view's values changed with its base (they share storage), so its old history is stale;
    as in PyTorch, it is regenerated from the base's current history.
    """
    fresh = replay_view(view._base, _view_chain(view))
    if fresh._grad_fn is None:  # not recording (no_grad): keep the old history
        return
    view._grad_fn, view._output_nr = fresh._grad_fn, 0
    view._grad_version = view._version_box[0]


def _view_chain(view) -> tuple:
    chain = []
    while view._view_src is not None:
        parent, op, params = view._view_src
        chain.append((op, params))
        view = parent
    return tuple(reversed(chain))


def register_hook(tensor, hook) -> RemovableHandle:
    """``Tensor.register_hook``: see there."""
    if not tensor._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if tensor._grad_fn is None:
        if tensor._hooks is None:
            tensor._hooks = {}
        return RemovableHandle(tensor._hooks, hook)
    return tensor._grad_fn._register_tensor_hook(hook, tensor._output_nr)


def register_post_accumulate_grad_hook(tensor, hook) -> RemovableHandle:
    """``Tensor.register_post_accumulate_grad_hook``: see there."""
    if tensor._grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    if not tensor._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if tensor._post_accumulate_hooks is None:
        tensor._post_accumulate_hooks = {}
    return RemovableHandle(tensor._post_accumulate_hooks, hook)


def retain_grad(tensor) -> None:
    """``Tensor.retain_grad``: see there."""
    if not tensor._requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    if tensor._grad_fn is not None:
        tensor._retains_grad = True
        fn = tensor._grad_fn
        extras = fn._made_extras()
        if extras.retained is None:
            extras.retained = {}
            _track(fn)
        extras.retained[tensor._output_nr] = weakref.ref(tensor)


# Note [Saved tensors hooks]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``saved_tensors_hooks(pack, unpack)`` makes ``record`` replace each tensor an op saves (its
# inputs, its output) by ``pack(tensor)``, and ``Node.saved``/``saved_data``/``output_data`` call
# ``unpack`` on it (the node's ``_NodeExtras.unpack``). The version counters are kept and checked
# as without hooks, and an intermediate gets its history back from the node's edge. The hooks are
# per thread, as PyTorch's; ``_saved_hooks_entered`` counts the contexts open in any thread, so a
# recorded op pays one global check when none is. A custom Function's ``ctx.save_for_backward``
# does not go through them (it keeps its tensors itself).


class _SavedHooksState(threading.local):
    """This thread's stack of ``(pack, unpack)`` and ``disable_saved_tensors_hooks``' message."""

    stack = ()
    disabled = None


_saved_hooks = _SavedHooksState()
_saved_hooks_entered = 0


def _pack_saved(node, inputs, out) -> bool:
    """Pack what ``node`` saves with this thread's innermost hooks; returns whether there were any."""
    stack = _saved_hooks.stack
    if not stack:  # the hooks were entered in another thread
        return False
    pack, unpack = stack[-1]
    saved = list(node._fns_saved)
    for k in range(len(node.next_nrs), len(saved), 3):
        if saved[k + 1] is not None:  # a tensor, not a non-tensor input or one nobody reads
            saved[k] = pack(inputs[node._saved_position(k)])
    node._fns_saved = tuple(saved)
    if node._out is not None:
        _, device, box, version = node._out
        node._out = (pack(out), device, box, version)
    node._made_extras().unpack = unpack
    _track(node)
    return True


def _unpacked(unpack, packed) -> Tensor:
    """``unpack(packed)``, checked.

    Raises:
        TypeError: if the unpack hook does not return a Tensor, as PyTorch.
    """
    t = unpack(packed)
    if not isinstance(t, Tensor):
        raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                        f"{type(t).__name__}")
    return t


def push_saved_hooks(pack_hook, unpack_hook) -> None:
    """Make ``(pack_hook, unpack_hook)`` this thread's innermost saved-tensor hooks (Note [Saved
    tensors hooks]; ``saved_tensors_hooks`` in autograd/_saved_hooks.py calls it).

    Raises:
        RuntimeError: inside ``disable_saved_tensors_hooks`` (its message).
    """
    global _saved_hooks_entered
    if _saved_hooks.disabled is not None:
        raise RuntimeError(_saved_hooks.disabled)
    _saved_hooks.stack = (*_saved_hooks.stack, (pack_hook, unpack_hook))
    _saved_hooks_entered += 1


def pop_saved_hooks() -> None:
    """Drop this thread's innermost saved-tensor hooks."""
    global _saved_hooks_entered
    _saved_hooks.stack = _saved_hooks.stack[:-1]
    _saved_hooks_entered -= 1


# The rest of torch.autograd.graph's API, kept apart (it needs this module's names).
from ._saved_hooks import (  # noqa: E402
    GradientEdge,
    disable_saved_tensors_hooks,
    get_gradient_edge,
    increment_version,
    register_multi_grad_hook,
    save_on_cpu,
    saved_tensors_hooks,
)
