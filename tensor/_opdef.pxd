# Cython declarations that compile tensor/_opdef.py unchanged: OpDef becomes an extension type
# whose fields the dispatcher and the recorder, which declare their ops OpDef, read as C struct
# fields (Note [Compiled dispatch and graph] in tensor/_accelerator.py).

from tensor._tensor_base cimport _member_slots


cdef class OpDef:
    # In FIELDS' order (_opdef.py), right before __weakref__: _member_slots relies on it.
    cdef object name, kernel, backward, saves, saves_output, differentiable, is_view, saved_for, operator
    cdef object grad_fn_name
    cdef object __weakref__
