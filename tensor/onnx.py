"""``tensor.onnx``: export a function or module as an ONNX model (``torch.onnx`` in spirit).

    >>> tensor.onnx.export(model, (x,), "model.onnx")  # doctest: +SKIP

See ``tensor/_compile/onnx_export.py``. Needs the ``onnx`` extra.
"""

from ._compile.onnx_export import export

__all__ = ["export"]
