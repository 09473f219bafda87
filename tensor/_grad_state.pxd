# Cython declarations that compile tensor/_grad_state.py unchanged: the grad-mode flags become C
# thread-local variables (one copy per thread, zero-initialised: grad enabled, inference off),
# and grad_enabled() a C function that the dispatcher cimports.

cdef extern from *:
    """
    static __thread int distrib_grad_off __attribute__((unused)) = 0;
    static __thread int distrib_inference_on __attribute__((unused)) = 0;
    """
    int _grad_off "distrib_grad_off"
    int _inference_on "distrib_inference_on"

cdef bint _COMPILED

cpdef bint grad_enabled() noexcept
cpdef bint inference_enabled() noexcept
cdef void _set_flags(object enabled, object inference) except *


cdef class GradMode:
    pass
