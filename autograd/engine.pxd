# Cython declarations that compile autograd/engine.py unchanged (Note [Compiled dispatch and
# graph] in tensor/_accelerator.py): the backward walk reads a node's fields as C struct fields
# (Node is graph.pxd's extension type), and the per-node helpers are C calls.

cimport cython

from autograd.graph cimport Node


@cython.locals(node=Node, nodes=set, found=list, leaf_edges=dict)
cdef tuple _collect(list root_nodes)
@cython.locals(node=Node, buffers=dict)
cpdef object _execute(object roots, object retain_graph, object create_graph, object capture=*, object accumulate_leaves=*)
@cython.locals(single=bint, i=Py_ssize_t, fns=tuple, nrs=tuple, producer=Node)
cpdef object _run_node(Node node, object grads, dict buffers, object finish, object capture, bint check_nan=*)
@cython.locals(slot=list)
cdef object _accumulate(dict buffers, Node node, object nr, object g)
cdef object _sum(object a, object b)
