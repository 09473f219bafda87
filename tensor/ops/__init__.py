"""The op library: primitives with their derivatives (see ``registry``) and compositions."""

# modules without star exports: importing them registers their ops (for nn, Tensor methods, tensor)
from . import activation, householder, ldl, lu, pool, precision, recurrent, recurrent_layers, spectral  # noqa: F401
from .clamping import *  # noqa: F401,F403
from .comparison import *  # noqa: F401,F403
from .complex_ops import *  # noqa: F401,F403
from .decomp import *  # noqa: F401,F403
from .diagonals import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .elementwise import pow  # noqa: F401 - names that shadow builtins
from .flips import *  # noqa: F401,F403
from .gamma import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .join_split import *  # noqa: F401,F403
from .layout import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .math_extra import *  # noqa: F401,F403
from .more_ops import *  # noqa: F401,F403
from .norms import *  # noqa: F401,F403
from .numeric import *  # noqa: F401,F403
from .numeric_extra import *  # noqa: F401,F403
from .reduction import *  # noqa: F401,F403
from .reduction import all, any, max, min, sum  # noqa: F401
from .registry import OPS  # noqa: F401
from .repeats import *  # noqa: F401,F403
from .scan import *  # noqa: F401,F403
from .selection import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .softmax import *  # noqa: F401,F403
from .sorting import *  # noqa: F401,F403
from .special import *  # noqa: F401,F403
from .special_extra import *  # noqa: F401,F403
from .static_shape import *  # noqa: F401,F403
from .strided import *  # noqa: F401,F403
from .unary import *  # noqa: F401,F403
from .unary import abs, round  # noqa: F401 - names that shadow builtins
from .window import *  # noqa: F401,F403
