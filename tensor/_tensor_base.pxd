# Cython declarations that compile tensor/_tensor_base.py (Note [Compiled Tensor fields] there):
# TensorBase becomes an extension type whose fields are C struct fields. Modules that read them
# ``cimport`` TensorBase and declare their tensors with it.

cdef extern from *:
    """
    #include <structmember.h>
    /* Give `type` a member descriptor (T_OBJECT_EX, as __slots__ makes) for each of its object
       fields `names`, declared in this order right before its __weakref__ field: CPython's
       interpreter specialises reads and writes of member descriptors (Cython would make the
       fields properties, which it does not). */
    static inline int distrib_member_slots(PyObject *type, PyObject *names) {
        PyTypeObject *tp = (PyTypeObject *)type;
        Py_ssize_t n = PyTuple_GET_SIZE(names);
        Py_ssize_t first = tp->tp_weaklistoffset - n * (Py_ssize_t)sizeof(PyObject *);
        if (first != (Py_ssize_t)sizeof(PyObject)) {
            PyErr_Format(PyExc_RuntimeError, "%s: unexpected layout, fields start at %zd",
                         tp->tp_name, first);
            return -1;
        }
        PyMemberDef *defs = PyMem_Calloc(n, sizeof(PyMemberDef));  /* lives as long as the type */
        if (defs == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        Py_INCREF(names);  /* keeps the names' UTF-8 buffers, which the members point to */
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *name = PyTuple_GET_ITEM(names, i);
            defs[i].name = PyUnicode_AsUTF8(name);
            if (defs[i].name == NULL) return -1;
            defs[i].type = T_OBJECT_EX;
            defs[i].offset = first + i * (Py_ssize_t)sizeof(PyObject *);
            PyObject *descr = PyDescr_NewMember(tp, &defs[i]);
            if (descr == NULL) return -1;
            int failed = PyDict_SetItem(tp->tp_dict, name, descr);
            Py_DECREF(descr);
            if (failed) return -1;
        }
        PyType_Modified(tp);
        return 0;
    }
    """
    int _member_slots "distrib_member_slots" (object cls, tuple names) except -1

cdef extern from *:
    """
    /* The generic set and delete that TensorBase.__delattr__ falls back to (object.__setattr__
       refuses a type with its own tp_setattro). */
    static inline int distrib_generic_delattr(PyObject *o, PyObject *name) {
        return PyObject_GenericSetAttr(o, name, NULL);
    }
    """
    int _generic_setattr "PyObject_GenericSetAttr" (object o, object name, object value) except -1
    int _generic_delattr "distrib_generic_delattr" (object o, object name) except -1

cdef extern from *:
    """
    /* cls.__new__(cls) for a subclass of TensorBase, as a C call (Cython makes a method call of
       TensorBase.__new__(cls) unless cls is TensorBase itself). */
    static inline PyObject *distrib_new_tensor(PyTypeObject *cls) {
        PyObject *empty = PyTuple_New(0);
        if (empty == NULL) return NULL;
        PyObject *t = cls->tp_new(cls, empty, NULL);
        Py_DECREF(empty);
        return t;
    }
    """
    TensorBase new_tensor "distrib_new_tensor" (type cls)


cdef class TensorBase:
    # In FIELDS' order (_tensor_base.py), right before __weakref__: distrib_member_slots relies on
    # it. No __dict__ here: Tensor, a Python subclass, gets CPython's own (made when first used).
    cdef object _data, _device, _version_box, _requires_grad, _grad_fn, _output_nr, _base, _view_src
    cdef object _grad_version, _hooks, _post_accumulate_hooks, _retains_grad, _is_inference
    cdef object _saved_by_reference, grad
    cdef object __weakref__


cdef inline int _check_fields(tuple names) except -1:
    """Check, at import, that each member descriptor reads the C field of its name."""
    cdef TensorBase t = TensorBase.__new__(TensorBase)
    (t._data, t._device, t._version_box, t._requires_grad, t._grad_fn, t._output_nr, t._base,
     t._view_src, t._grad_version, t._hooks, t._post_accumulate_hooks, t._retains_grad,
     t._is_inference, t._saved_by_reference, t.grad) = names
    for name in names:
        if getattr(t, name) is not name:
            raise RuntimeError(f"TensorBase: the member {name!r} does not read the field of that name")
    return 0
