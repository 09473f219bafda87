"""Settings of ``tensor.compile`` (``tensor.compile.config``), PyTorch's names where it has them."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

__all__ = ["config", "Config"]


@dataclass
class Config:
    """Process-wide settings; a compiled function's ``options`` override them for that function.

    * ``cache_size_limit``: captures per function before it runs eagerly (PyTorch: 8).
    * ``numpy_default_float``: the dtype of NumPy float creation ops inside compiled code.
    * ``output_code``: print every generated kernel (also ``TENSOR_LOGS=output_code``).
    * ``cache_dir``: where compiled kernels are kept between processes.
    * ``split_regions``: run chains of products that share a dim one slice per CPU thread
      (Note [Split regions] in split_region.py); False keeps each product split on its own.
    """

    cache_size_limit: int = 8
    numpy_default_float: str = "float64"
    output_code: bool = field(default_factory=lambda: "output_code" in os.environ.get("TENSOR_LOGS", ""))
    split_regions: bool = True
    cache_dir: str = field(default_factory=lambda: os.environ.get(
        "TENSOR_COMPILE_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "distrib-compile")))


config = Config()
