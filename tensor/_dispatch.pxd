# Cython declarations that compile tensor/_dispatch.py unchanged (Note [Compiled dispatch and
# graph] in tensor/_accelerator.py): the helpers the hot path calls become direct C calls, and
# tensors declared TensorBase and ops declared OpDef have their fields read as C struct fields
# (Note [Compiled Tensor fields] in tensor/_tensor_base.py; tensor/_opdef.py). tracer, profiler
# and autocast stay ordinary module attributes, set from other modules.

cimport cython

from tensor._grad_state cimport grad_enabled, inference_enabled
from tensor._host_arrays cimport array_dtype, array_kind
from tensor._opdef cimport OpDef
from tensor._tensor_base cimport TensorBase, new_tensor

cdef bint _COMPILED
cdef dict _VERSION_0
cdef object _HOST, _HOST_ARRAY, _record


@cython.locals(t=TensorBase)
cpdef TensorBase make(object array, object device, object version=*)
@cython.locals(t=TensorBase)
cpdef TensorBase make_view(object array, TensorBase parent, object op, object params)
cpdef object check_same_device(object op_name, object tensors)
cpdef object apply(OpDef op, object inputs, object params=*)
cpdef object apply_unary(OpDef op, TensorBase a, object params=*)
@cython.locals(b_grad=bint, b_tensor=TensorBase)
cpdef object apply_binary(OpDef op, TensorBase a, object b, object float_result=*)
@cython.locals(b_tensor=TensorBase)
cpdef object _binary_kernel(OpDef op, object backend, TensorBase a, object b, object float_result)
cpdef object _check_scalar(object op, object value)
cdef object _as_backend_array(object out, object backend)
