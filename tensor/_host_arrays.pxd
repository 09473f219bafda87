# Reading a numpy array's dtype from its C struct, for the compiled dispatcher and recorder (Note
# [Compiled dispatch and graph] in tensor/_accelerator.py): the attribute lookups ``a.dtype`` and
# ``a.dtype.kind`` cost them ~130 instructions each, several times per op. Only an array of
# exactly ``host_type`` (numpy.ndarray, the CPU backend's array type, passed in by the caller)
# is read this way; any other array (CuPy's, a subclass) is asked for its attributes, so the
# result is the same for every backend. numpy's headers define the struct (setup.py adds their
# directory); no function of numpy's C API is called, so the module needs no ``import_array``.

from cpython.object cimport PyObject, Py_TYPE

cdef extern from "numpy/arrayobject.h":
    ctypedef struct PyArrayObject
    ctypedef struct PyArray_Descr:
        char kind
    PyArray_Descr* PyArray_DESCR(PyArrayObject* array)


cdef inline object array_dtype(object a, object host_type):
    """``a.dtype``."""
    if <PyObject*>Py_TYPE(a) == <PyObject*>host_type:
        return <object>PyArray_DESCR(<PyArrayObject*>a)
    return a.dtype


cdef inline str array_kind(object a, object host_type):
    """``a.dtype.kind``."""
    if <PyObject*>Py_TYPE(a) == <PyObject*>host_type:
        return chr(PyArray_DESCR(<PyArrayObject*>a).kind)
    return a.dtype.kind
