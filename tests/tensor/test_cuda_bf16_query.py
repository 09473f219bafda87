"""``tensor.cuda.is_bf16_supported`` answers what CUDA tensors can hold here."""

from __future__ import annotations

import pytest

import tensor


def test_is_bf16_supported_agrees_with_what_cuda_tensors_hold(device):
    assert tensor.cuda.is_bf16_supported() is False
    assert tensor.cuda.is_bf16_supported(including_emulation=False) is False
    if device == "cuda":
        with pytest.raises((TypeError, RuntimeError), match="bfloat16"):
            tensor.zeros(2, dtype=tensor.bfloat16, device=device)
