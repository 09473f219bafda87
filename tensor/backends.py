"""``tensor.backends``: PyTorch's backend flags, as ``torch.backends``.

Programs set these without asking what they do, so each exists and is settable. None of them
changes a result here: numpy and CuPy have no cuDNN autotuner to toggle (``cudnn.benchmark``),
convolutions run as im2col + matmul, which is deterministic on the CPU (``cudnn.deterministic``),
and matmuls use the dtype they are given (no TF32 or reduced-precision reductions). They are
plain flags, documented as no-ops.

    >>> import tensor
    >>> tensor.backends.cudnn.benchmark = True
    >>> tensor.backends.mps.is_available()
    False
"""

from __future__ import annotations

from types import SimpleNamespace

from . import cuda as _cuda

__all__ = ["cudnn", "cuda", "mps", "mkldnn", "openmp", "mkl"]


def _false() -> bool:
    return False


def _cudnn_available() -> bool:
    """True with a GPU: CuPy's convolutions stand in for cuDNN's."""
    return _cuda.is_available()


def _cudnn_version() -> int | None:
    return None


cudnn = SimpleNamespace(
    enabled=True,
    benchmark=False,
    deterministic=False,
    allow_tf32=True,
    is_available=_cudnn_available,
    version=_cudnn_version,
)
cudnn.__doc__ = "cuDNN flags (no-ops: there is no cuDNN autotuner or nondeterministic kernel here)."

cuda = SimpleNamespace(
    matmul=SimpleNamespace(
        allow_tf32=False, allow_fp16_reduced_precision_reduction=True, allow_bf16_reduced_precision_reduction=True
    ),
    is_built=_cuda.is_available,
)
cuda.__doc__ = "CUDA matmul precision flags (no-ops: matmuls run in the dtype they are given)."

mps = SimpleNamespace(is_available=_false, is_built=_false)
mps.__doc__ = "Apple's Metal backend: never available here."

mkldnn = SimpleNamespace(enabled=True, is_available=_false)
openmp = SimpleNamespace(is_available=_false)
mkl = SimpleNamespace(is_available=_false)
