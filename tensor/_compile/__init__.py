"""``tensor.compile``: capture a function's ops into a graph, fuse them and compile the groups.

The modules, in the order a call meets them: ``api`` (the front end, cache and
recompiles), ``guards``, ``capture`` (the tracer the dispatcher reports to),
``graph`` (the IR), ``symbolic`` (one graph at many sizes), ``numpy_capture`` (NumPy programs), ``entry`` and ``runner``
(replay), ``lowering``, ``fusion``, ``codegen_numba`` (fused CPU kernels) and
``codegen_cupy`` (fused GPU kernels, CUDA C), ``explain``. numba is imported only when a
kernel is compiled.
"""

from .api import CompiledFunction, compile
from .capture import GraphBreakError
from .config import config
from .explain import explain
from .guards import mark_dynamic

compile.explain = explain
compile.config = config
compile.GraphBreakError = GraphBreakError
compile.mark_dynamic = mark_dynamic

__all__ = ["compile", "CompiledFunction", "GraphBreakError", "config", "explain", "mark_dynamic"]
