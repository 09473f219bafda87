"""``cupy.fft`` for the stand-in: CuPy 13's functions, each numpy's as a kernel on the current device.

``fftfreq``/``rfftfreq`` make a device array from sizes alone, as CuPy's do.
"""

from __future__ import annotations

import numpy as np

from . import _kernels

NAMES = """
    fft ifft fft2 ifft2 fftn ifftn rfft irfft rfft2 irfft2 rfftn irfftn hfft ihfft fftshift ifftshift
""".split()

globals().update({name: _kernels.function(getattr(np.fft, name), name) for name in NAMES})


def fftfreq(n, d=1.0):
    """The sample frequencies, as a device array."""
    from . import asarray  # noqa: PLC0415 - the package imports this module first

    return asarray(np.fft.fftfreq(n, d))


def rfftfreq(n, d=1.0):
    """The non-negative sample frequencies, as a device array."""
    from . import asarray  # noqa: PLC0415

    return asarray(np.fft.rfftfreq(n, d))
