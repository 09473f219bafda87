# Cython declarations that compile autograd/graph.py unchanged (Note [Compiled dispatch and
# graph] in tensor/_accelerator.py): Node becomes an extension type, which record() takes out
# of the cyclic GC's tracking (Note [Graphs and the cyclic GC] in graph.py), and tensors declared
# TensorBase have their fields read as C struct fields (Note [Compiled Tensor fields] in
# tensor/_tensor_base.py).

cimport cython

from tensor._host_arrays cimport array_dtype
from tensor._opdef cimport OpDef
from tensor._tensor_base cimport TensorBase

from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF

cdef extern from "Python.h":
    void PyObject_GC_Track(object op)
    void PyObject_GC_UnTrack(object op)
    int PyObject_GC_IsTracked(object op)
    Py_ssize_t _refcount "Py_REFCNT"(PyObject* op)
    Py_ssize_t _tuple_size "PyTuple_GET_SIZE"(PyObject* op)
    PyObject* _tuple_get "PyTuple_GET_ITEM"(PyObject* op, Py_ssize_t i)
    void _tuple_set "PyTuple_SET_ITEM"(PyObject* op, Py_ssize_t i, PyObject* item)


cdef class Node:
    # 9 pointers and 16 bytes of C fields: 120 bytes with the object's and the GC's headers, in
    # the allocator's 128-byte size class (Note [Graphs and the cyclic GC] in graph.py).
    cdef public object op, params, _fns_saved, _device, _out, next_nrs, out_meta, _extras
    cdef object __weakref__
    cdef public Py_ssize_t seq  # C fields: no int or bool object per live node
    cdef public int n_outputs
    cdef public bint freed

    cpdef object release(self)


cdef inline bint _drop_saved_in_place(Node node, Py_ssize_t n):
    """``Node.release`` of a compiled node: replace the saved triples of ``_fns_saved`` (after its
    ``n`` edges) by None in place when the node holds the only reference to it (nobody can see
    the tuple change); one tuple fewer made and freed per node in a backward. Returns whether it
    could."""
    cdef PyObject* items = <PyObject*>node._fns_saved
    cdef PyObject* old
    cdef Py_ssize_t k
    if _refcount(items) != 1:
        return False
    for k in range(n, _tuple_size(items)):
        old = _tuple_get(items, k)
        Py_INCREF(None)
        _tuple_set(items, k, <PyObject*>None)
        Py_XDECREF(old)  # after the store: a finalizer run here sees the tuple consistent
    return True


cdef dict _ZERO_NRS, _OUT_META  # C globals: their .get() a direct dict lookup
cdef object _HOST_ARRAY

cdef void _untrack(Node node)
cdef void _track(Node node)
@cython.locals(t=TensorBase, n=Py_ssize_t, i=Py_ssize_t, j=Py_ssize_t, k=Py_ssize_t, items=list, saves=tuple,
               saved_for=tuple)
cdef bint _link(Node node, OpDef op, object params, object inputs, object n_outputs) except -1
cdef tuple _output_nrs(object inputs)
@cython.locals(k=Py_ssize_t, saved=tuple, arrays=list)
cdef tuple _saved_arrays(Node node)
cpdef Node record(OpDef op, TensorBase out, object inputs, object params)
