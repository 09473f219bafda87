"""The optional compiled accelerator: which modules run compiled, and the opt-out.

Note [Compiled dispatch and graph]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The dispatcher (``tensor/_dispatch.py``) and the recorder (``autograd/graph.py``) run for every
op, and a recorded op costs what Python's interpreter spends in them. ``setup.py`` compiles these
same ``.py`` files with Cython 3 in its pure-Python mode: the ``.py`` files stay the only source
and run unchanged as plain Python, and ``.pxd`` files beside them add the C declarations
(``autograd/graph.pxd`` makes ``Node`` an extension type, and ``tensor/_tensor_base.pxd`` the
base class of ``Tensor``: Note [Compiled Tensor fields] in tensor/_tensor_base.py). ``_COMPILED`` in graph.py (its
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
ACCELERATED = ("tensor._tensor_base", "tensor._dispatch", "autograd.graph", "autograd.engine")


def pure_python_requested() -> bool:
    """Whether ``DISTRIB_PURE_PYTHON=1`` asks for the plain-Python modules."""
    return os.environ.get("DISTRIB_PURE_PYTHON", "") == "1"


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


def _stale(stem: str) -> bool:
    """Whether the compiled module at ``stem`` (its path without a suffix) is older than its
    ``.py`` or ``.pxd`` (False where it is not compiled)."""
    built = [_mtime(stem + s) for s in importlib.machinery.EXTENSION_SUFFIXES]
    return any(built) and max(built) < max(_mtime(stem + ".py"), _mtime(stem + ".pxd"))


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
                if not any(_mtime(os.path.join(entry, stem + s)) for s in importlib.machinery.EXTENSION_SUFFIXES):
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


install_source_finder()  # at import: tensor/__init__.py imports this module first
