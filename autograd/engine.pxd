# Cython declarations that compile autograd/engine.py unchanged (Note [Compiled dispatch and
# graph] in tensor/_accelerator.py): the backward walk reads a node's fields as C struct fields
# (Node is graph.pxd's extension type), and the per-node helpers and the leaves'
# ``_LeafFinisher.add`` are C calls.

cimport cython

from autograd.graph cimport Node


cdef class _LeafFinisher:
    cdef public object grads, pending, capture, accumulate_leaves, create_graph, claimed, summed

    cpdef object add(self, object leaf, object g)


@cython.locals(node=Node, nodes=set, found=list, leaf_edges=dict, fns=tuple, i=Py_ssize_t)
cdef tuple _collect(list root_nodes)
@cython.locals(node=Node, buffers=dict, finish=_LeafFinisher)
cpdef object _execute(object roots, object retain_graph, object create_graph, object capture=*, object accumulate_leaves=*)
@cython.locals(single=bint, i=Py_ssize_t, n=Py_ssize_t, fns=tuple, nrs=tuple, producer=Node)
cpdef object _run_node(Node node, object grads, dict buffers, _LeafFinisher finish, object capture, bint check_nan=*)
@cython.locals(slot=list)
cdef object _accumulate(dict buffers, Node node, object nr, object g)
cdef object _sum(object a, object b)
cdef object _fit(object g, object shape, object dtype)
