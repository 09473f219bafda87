"""The optional compiled accelerator: which modules run compiled, and the opt-out.

Note [Compiled dispatch and graph]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The dispatcher (``tensor/_dispatch.py``) and the recorder (``autograd/graph.py``) run for every
op, and a recorded op costs what Python's interpreter spends in them. ``setup.py`` compiles these
same ``.py`` files with Cython 3 in its pure-Python mode: the ``.py`` files stay the only source
and run unchanged as plain Python, and ``.pxd`` files beside them add the C declarations
(``autograd/graph.pxd`` makes ``Node`` an extension type, ``tensor/_tensor_base.pxd`` the
base class of ``Tensor``: Note [Compiled Tensor fields] in tensor/_tensor_base.py, and
``tensor/_opdef.pxd`` the op table's ``OpDef``; ``tensor/_grad_state.pxd`` makes the grad-mode
flags C thread-locals). The dispatcher and the recorder also read the
dtype of a numpy array from numpy's array struct (``tensor/_host_arrays.pxd``, built with numpy's
headers), where plain Python asks the array for it. ``_COMPILED`` in graph.py (its
``__file__`` is not a ``.py``) is True only in the compiled module, so code that needs the C API
(taking a node out of the cyclic GC's tracking, Note [Graphs and the cyclic GC]) runs only there;
the sources never import Cython (its shadow module, loaded in plain Python, moved the peak of a
tracemalloc-measured FSDP step over its bound in tests/distrib/test_fsdp.py).

The extensions are optional: ``pip install -e .`` builds them when Cython (a build requirement in
pyproject.toml) and a C compiler work, and installs the pure-Python package, saying so, when they
do not or when ``DISTRIB_PURE_PYTHON=1`` is set at install time. At run time
``DISTRIB_PURE_PYTHON=1`` makes ``import tensor`` load the ``.py`` sources even where the
compiled modules exist: ``install_source_finder`` puts a finder for exactly these modules ahead
of Python's, which otherwise prefers an extension module to a source file. The same finder loads
the source, with a warning, when it is newer than its compiled module (edited since the last
``pip install -e .``), so that an edit is never silently shadowed by a stale build; then every
accelerated module runs from its source, as a compiled module reads the extension types it
``cimport``s from another (``autograd/engine.pxd`` the ``Node`` of ``graph.pxd``) as C structs.
``tensor._accelerated()`` says which modules are compiled in this process; scripts/test prints it.

Note [Arena cache]
~~~~~~~~~~~~~~~~~~
Python's small-object allocator (pymalloc) carves objects out of 1 MiB arenas that it maps with
``mmap`` and unmaps as soon as one is empty. A live chain of recorded ops keeps a few hundred
bytes per op in pymalloc (a 100,000-op chain tens of arenas): dropping it unmaps them all and
the next chain page-faults every page in again (0.2 faults per op, ~0.9 us of a ~3-6 us op on
this VM; BENCHMARKS.md, issue 19), where PyTorch's per-op objects live in glibc's malloc, which
keeps freed memory. ``tensor/_arena.pyx`` (compiled only) wraps CPython's arena allocator
(``PyObject_SetArenaAllocator``): a freed arena goes onto a free list, up to a bound, instead of
back to the OS, and the next arena allocation takes it from there. ``install_arena_cache`` below
installs it when ``tensor`` is imported (this module is imported first).

* Correct for any arena: the cache never frees, it only delays the previous allocator's free.
  Every block it holds was made by the previous allocator with the same size (it caches only
  blocks of exactly pymalloc's arena size, 1 MiB, and hands them out only for that size; the
  interpreter's frame-stack chunks, which the same allocator serves, pass through), and one
  that does not fit goes to the previous allocator's free, the one that made it, arenas mapped
  before the cache was installed included.
* Thread-safe because pymalloc calls the arena allocator only from ``PyObject_Malloc`` and
  ``PyObject_Free``, which run with the GIL held (CPython 3.11 has one GIL for all its
  interpreters), so the free list is never touched by two threads at once; a spin lock held
  for a few stores keeps it so where interpreters have their own GIL (CPython 3.12+). Fork-safe:
  ``fork`` runs with the GIL held, and the child gets a copy of the free list with the (private,
  copy-on-write) arenas it points to.
* Installed once per process: ``install`` keeps a C flag in the extension (a module imported
  twice, or another caller, gets False).
* The bound, ``DISTRIB_ARENA_CACHE_MB`` (default 64; 0: the allocator is left alone): at most
  that much memory the process already had at its peak stays mapped but unused, the order of
  what glibc keeps for PyTorch (its trim threshold grows up to 64 MiB), and enough for the
  arenas of a 100,000-op live chain.
* Without a compiler, with ``DISTRIB_PURE_PYTHON=1`` or with a ``_arena.pyx`` newer than its
  build (with a warning), there is no cache: arenas go back to the OS as in plain CPython. It is
  not one of ``ACCELERATED``: the other modules do not depend on it, so a stale cache module
  does not send them to their sources.

Why Cython rather than mypyc: mypyc compiles only fully type-annotated code to its own classes,
and its native classes cannot be left out of the cyclic GC's tracking; Cython compiles these
modules as they are, and its extension types can be.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys
import warnings

# The modules setup.py compiles (dotted names; each is the .py file of that name).
ACCELERATED = (
    "tensor._tensor_base", "tensor._opdef", "tensor._grad_state",
    "tensor._dispatch", "autograd.graph", "autograd.engine",
)
# The directory holding the packages (tensor/, autograd/, ...).
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pure_python_requested() -> bool:
    """Whether ``DISTRIB_PURE_PYTHON=1`` asks for the plain-Python modules."""
    return os.environ.get("DISTRIB_PURE_PYTHON", "") == "1"


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


def _built(stem: str) -> float:
    """The modification time of the compiled module at ``stem`` (its path without a suffix), 0.0
    where there is none."""
    return max(_mtime(stem + s) for s in importlib.machinery.EXTENSION_SUFFIXES)


def is_built(name: str) -> bool:
    """Whether the module ``name`` (dotted, e.g. ``"tensor._arena"``) has a compiled extension
    beside its source, whether or not this process uses it."""
    return _built(os.path.join(_ROOT, *name.split("."))) > 0


def _stale(stem: str) -> bool:
    """Whether the compiled module at ``stem`` (its path without a suffix) is older than its
    ``.py``, ``.pxd`` or ``.pyx`` (False where it is not compiled)."""
    built = _built(stem)
    return 0 < built < max(_mtime(stem + s) for s in (".py", ".pxd", ".pyx"))


class _SourceFinder:
    """A meta-path finder that loads an accelerated module from its ``.py`` file when asked to
    (``DISTRIB_PURE_PYTHON=1``) or when its compiled module, or another one's, is older than the source."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name not in ACCELERATED or not path:
            return None
        stem = name.rpartition(".")[2]
        for entry in path:
            source = os.path.join(entry, stem + ".py")
            if not os.path.isfile(source):
                continue
            if not pure_python_requested():
                if not _built(os.path.join(entry, stem)):
                    return None  # not compiled: Python's own finder loads the source
                # One stale module sends every one to its source: a compiled module reads the
                # extension types it cimports (graph's Node, ...) as C structs, which a class
                # loaded from its source is not.
                root = os.path.dirname(entry)
                stale = [other for other in ACCELERATED if _stale(os.path.join(root, *other.split(".")))]
                if not stale and not _stale(os.path.join(entry, stem)):
                    return None  # the compiled modules are up to date
                warnings.warn(
                    f"{name}: running {source}, not its compiled module: {', '.join(stale or [name])} "
                    "is older than its source (rebuild with `pip install -e .`)",
                    stacklevel=2,
                )
            loader = importlib.machinery.SourceFileLoader(name, source)
            return importlib.util.spec_from_file_location(name, source, loader=loader)
        return None


def install_source_finder() -> None:
    """Make the accelerated modules import from their sources where asked or where their build is stale."""
    if not any(f is _SourceFinder for f in sys.meta_path):
        sys.meta_path.insert(0, _SourceFinder)


def accelerated() -> tuple[str, ...]:
    """The names of the accelerated modules imported as compiled extensions in this process.

    Empty when the package was installed without them or ``DISTRIB_PURE_PYTHON=1`` is set.

    >>> import tensor
    >>> set(tensor._accelerated()) <= set(tensor._accelerator.ACCELERATED)
    True
    """
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    # import_module: autograd.graph is above tensor's layer and may not be imported yet.
    return tuple(name for name in ACCELERATED if importlib.import_module(name).__file__.endswith(suffixes))


ARENA_CACHE_MB = 64  # DISTRIB_ARENA_CACHE_MB's default (Note [Arena cache])


def install_arena_cache() -> bool:
    """Install the compiled arena cache (Note [Arena cache]) unless ``DISTRIB_ARENA_CACHE_MB=0``,
    ``DISTRIB_PURE_PYTHON=1``, or it is not built (or older than its source: with a warning).

    Returns False, leaving the allocator alone, where the setting, ``DISTRIB_PURE_PYTHON`` or the
    build rules the cache out; otherwise whether the cache is the process's arena allocator.

    Raises:
        ValueError: if ``DISTRIB_ARENA_CACHE_MB`` is not a non-negative integer.
    """
    text = os.environ.get("DISTRIB_ARENA_CACHE_MB", "").strip()
    if not text.isdecimal() and text:
        raise ValueError(f"DISTRIB_ARENA_CACHE_MB must be a non-negative integer (MiB), got {text!r}")
    megabytes = int(text) if text else ARENA_CACHE_MB
    if megabytes == 0 or pure_python_requested():
        return False
    if _stale(os.path.join(_ROOT, "tensor", "_arena")):
        warnings.warn(
            "tensor._arena is older than tensor/_arena.pyx: no arena cache (rebuild with `pip install -e .`)",
            stacklevel=2,
        )
        return False
    try:
        from . import _arena  # noqa: PLC0415 - compiled only, optional
    except ImportError:
        return False
    _arena.install(megabytes << 20)
    return _arena.installed()


install_source_finder()  # at import: tensor/__init__.py imports this module first
install_arena_cache()
