"""CuPy 13.6's top-level namespace (from its ``cupy/__init__.py``), limited to what numpy 2 also has.

Names CuPy 13 lacks (``put_along_axis``, ``astype``, ``concat``, ``pow``, ...) are absent on
purpose: code that uses them would fail on a real CuPy 13.
"""

UFUNCS = """
    abs absolute add arccos arccosh arcsin arcsinh arctan arctan2 arctanh bitwise_and bitwise_not bitwise_or
    bitwise_xor cbrt ceil conj conjugate copysign cos cosh deg2rad degrees divide divmod equal exp exp2
    expm1 fabs float_power floor floor_divide fmax fmin fmod frexp gcd greater greater_equal heaviside hypot
    invert isfinite isinf isnan lcm ldexp left_shift less less_equal log log10 log1p log2 logaddexp
    logaddexp2 logical_and logical_not logical_or logical_xor matmul maximum minimum mod modf multiply
    negative nextafter not_equal positive power rad2deg radians reciprocal remainder right_shift rint sign
    signbit sin sinh sqrt square subtract tan tanh true_divide trunc
""".split()

FUNCTIONS = """
    all allclose amax amin angle any append apply_along_axis arange argmax argmin argpartition argsort
    argwhere around array_equal array_equiv array_split atleast_1d atleast_2d atleast_3d average
    bartlett bincount blackman broadcast_arrays broadcast_to choose column_stack compress concatenate
    convolve copy copyto corrcoef correlate count_nonzero cov cross cumprod cumsum delete diag diag_indices
    diag_indices_from diagflat diagonal diff digitize dot dsplit dstack ediff1d einsum empty empty_like
    expand_dims extract eye fill_diagonal fix flatnonzero flip fliplr flipud fromfunction
    full_like gradient hamming hanning histogram histogram2d histogramdd hsplit hstack i0 identity imag
    indices inner interp intersect1d isclose iscomplex isfortran isin isneginf isposinf isreal ix_ kaiser
    kron lexsort linspace logspace mask_indices max mean median meshgrid min moveaxis nan_to_num nanargmax
    nanargmin nancumprod nancumsum nanmax nanmean nanmedian nanmin nanprod nanstd nansum nanvar nonzero
    ones ones_like outer packbits pad partition percentile piecewise place poly polyadd polyfit polymul
    polysub polyval prod ptp put putmask quantile ravel ravel_multi_index real real_if_close repeat
    require reshape resize roll rollaxis roots rot90 round row_stack select setdiff1d setxor1d
    sinc sort sort_complex split squeeze stack std sum swapaxes take take_along_axis tensordot tile trace
    transpose tri tril tril_indices tril_indices_from trim_zeros triu triu_indices triu_indices_from
    union1d unique unpackbits unravel_index unwrap vander var vdot vsplit vstack zeros zeros_like
""".split()

# Functions of dtypes and shapes: no device arrays involved, numpy's answer as is.
METADATA = """
    broadcast_shapes can_cast iscomplexobj isrealobj isscalar issubdtype min_scalar_type ndim promote_types
    result_type shape size shares_memory may_share_memory
""".split()

TYPES = """
    bool_ byte cdouble complex128 complex64 complexfloating csingle double dtype finfo float16 float32
    float64 floating generic half iinfo inexact int16 int32 int64 int8 int_ intc integer intp longlong
    number short signedinteger single ubyte uint uint16 uint32 uint64 uint8 uintc uintp ulonglong
    unsignedinteger ushort e euler_gamma inf nan newaxis pi c_ r_ s_ index_exp
""".split()
