# Cython declarations that compile autograd/graph.py unchanged (Note [Compiled dispatch and
# graph] in tensor/_accelerator.py): Node becomes an extension type, which record() takes out
# of the cyclic GC's tracking (Note [Graphs and the cyclic GC] in graph.py), and tensors declared
# TensorBase have their fields read as C struct fields (Note [Compiled Tensor fields] in
# tensor/_tensor_base.py).

cimport cython

from tensor._tensor_base cimport TensorBase

cdef extern from "Python.h":
    void PyObject_GC_Track(object op)
    void PyObject_GC_UnTrack(object op)
    int PyObject_GC_IsTracked(object op)


cdef class Node:
    cdef public object op, params, _saved, _device, _out, next_fns, next_nrs, out_meta
    cdef public object n_outputs, pre_hooks, retained, freed, ctx
    cdef public Py_ssize_t seq  # a C integer: no int object per live node
    cdef object __weakref__

    cpdef object release(self)


cdef dict _ZERO_NRS, _OUT_META  # C globals: their .get() a direct dict lookup

cdef void _untrack(Node node)
cdef void _track(Node node)
@cython.locals(t=TensorBase, k=Py_ssize_t)
cdef bint _link(Node node, object op, object params, object inputs, object n_outputs) except -1
cdef tuple _output_nrs(object inputs)
@cython.locals(k=Py_ssize_t, saved=tuple, arrays=list)
cdef tuple _saved_arrays(Node node)
cpdef Node record(object op, TensorBase out, object inputs, object params)
