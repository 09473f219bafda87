"""The optional compiled accelerator (Note [Compiled dispatch and graph] in tensor/_accelerator.py).

Everything else about the package is in pyproject.toml. This file only declares the Cython
extensions, built from the same ``.py`` sources, as optional: without Cython, without a working
C compiler, or with ``DISTRIB_PURE_PYTHON=1`` set, the install succeeds with the pure-Python
package and says so once.
"""

import os

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# As tensor/_accelerator.py's ACCELERATED (not imported from there: the package is not
# importable before its dependencies are installed).
ACCELERATED = (
    "tensor._tensor_base", "tensor._opdef", "tensor._grad_state",
    "tensor._dispatch", "autograd.graph", "autograd.engine",
)
DIRECTIVES = {"language_level": 3, "annotation_typing": False, "binding": True}


def _pure_python(reason: str) -> list:
    print(f"distrib: {reason}: installing the pure-Python package (no compiled accelerator)")
    return []


def _extensions() -> list:
    if os.environ.get("DISTRIB_PURE_PYTHON", "") == "1":
        return _pure_python("DISTRIB_PURE_PYTHON=1")
    try:
        from Cython.Build import cythonize  # noqa: PLC0415 - optional: without it, plain Python
    except ImportError:
        return _pure_python("Cython is not installed")
    # numpy's headers: for the layout of its array struct (tensor/_host_arrays.pxd).
    import numpy  # noqa: PLC0415 - a build requirement (pyproject.toml), not needed at import
    numpy_headers = {
        "include_dirs": [numpy.get_include()],
        "define_macros": [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    }
    sources = [
        Extension(name, [name.replace(".", "/") + ".py"], optional=True, **numpy_headers) for name in ACCELERATED
    ]
    # The arena cache (Note [Arena cache] in tensor/_accelerator.py): Cython only, no .py source.
    sources.append(Extension("tensor._arena", ["tensor/_arena.pyx"], optional=True))
    try:
        # The generated C goes under build/, out of the source tree.
        return cythonize(sources, build_dir="build/cython", compiler_directives=DIRECTIVES, quiet=True)
    except Exception as exc:  # a Cython compile error: the sources still run as Python
        return _pure_python(f"Cython failed ({exc})")


class _OptionalBuildExt(build_ext):
    """build_ext that reports a failed optional extension once, in one line."""

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:
            print(f"distrib: building {ext.name} failed ({exc}): it runs as plain Python")


# The .pxd files travel with the sources (an sdist's build compiles them with their declarations).
setup(
    ext_modules=_extensions(),
    cmdclass={"build_ext": _OptionalBuildExt},
    package_data={"tensor": ["*.pxd", "*.pyx"], "autograd": ["*.pxd"]},
)
