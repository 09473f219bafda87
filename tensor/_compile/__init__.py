"""``tensor.compile``: capture a function's ops into a graph, fuse them and compile the groups.

The modules, in the order a call meets them: ``api`` (the front end, cache and
recompiles), ``guards``, ``capture`` (the tracer the dispatcher reports to),
``graph`` (the IR), ``numpy_capture`` (NumPy programs), ``entry`` and ``runner``
(replay), ``lowering``, ``fusion`` and ``codegen_numba`` (fused CPU kernels),
``explain``. numba is imported only when a kernel is compiled.
"""

from .api import CompiledFunction, compile
from .capture import GraphBreakError
from .config import config
from .explain import explain

compile.explain = explain
compile.config = config
compile.GraphBreakError = GraphBreakError

__all__ = ["compile", "CompiledFunction", "GraphBreakError", "config", "explain"]
