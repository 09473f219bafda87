# Cython declarations that compile tensor/_dispatch.py unchanged (Note [Compiled dispatch and
# graph] in tensor/_accelerator.py): the helpers the hot path calls become direct C calls.
# tracer, profiler and autocast stay ordinary module attributes, set from other modules.

cpdef object make(object array, object device, object version=*)
cpdef object make_view(object array, object parent, object op, object params)
cpdef object check_same_device(object op_name, object tensors)
cpdef object _binary_kernel(object op, object backend, object a, object b, object float_result)
cpdef object _check_scalar(object op, object value)
