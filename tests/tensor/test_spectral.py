"""``stft`` / ``istft`` (``tensor/ops/spectral.py``) against torch in float64: every pad mode,
centred or not, windows shorter than ``n_fft``, normalized, one- and two-sided, real and complex
signals, batched; the round trip; gradients against torch and by ``gradcheck``; the errors.
"""

from __future__ import annotations

import numpy as np
import pytest

import autograd
import tensor
from tests.helpers import assert_close

RNG = np.random.default_rng(16)
CASES = [
    {"n_fft": 16},
    {"n_fft": 16, "hop_length": 3, "win_length": 10, "hann": True},
    {"n_fft": 15, "center": False},
    {"n_fft": 16, "pad_mode": "constant", "normalized": True},
    {"n_fft": 8, "pad_mode": "replicate", "onesided": False},
    {"n_fft": 8, "pad_mode": "circular", "hop_length": 4, "hann": True},
    {"n_fft": 18, "hop_length": 2},  # 9 chunks per frame: istft's overlap-add by index_add
]


def _signal(shape, complex_):
    x = RNG.standard_normal(shape)
    return x + 1j * RNG.standard_normal(shape) if complex_ else x


def _windows(case, device, torch):
    if not case.get("hann"):
        return None, None
    n = case.get("win_length", case["n_fft"])
    return tensor.hann_window(n, dtype=tensor.float64, device=device), torch.hann_window(n, dtype=torch.float64)


def _split(case):
    kwargs = {k: v for k, v in case.items() if k != "hann"}
    inverse = {k: v for k, v in kwargs.items() if k != "pad_mode"}
    return kwargs, inverse


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_stft_istft_match_torch(device, torch):
    for shape in [(64,), (3, 50)]:
        for complex_ in (False, True):
            x = _signal(shape, complex_)
            for case in CASES:
                kwargs, inverse = _split(case)
                if complex_:
                    kwargs.pop("onesided", None)
                    inverse.update(onesided=False, return_complex=True)
                window, twindow = _windows(case, device, torch)
                ours = tensor.stft(tensor.tensor(x, device=device), window=window, return_complex=True, **kwargs)
                theirs = torch.stft(torch.tensor(x), window=twindow, return_complex=True, **kwargs)
                assert ours.shape == tuple(theirs.shape)
                assert_close(ours, theirs.numpy(), atol=1e-10, rtol=1e-10)
                back = tensor.istft(ours, window=window, length=shape[-1], **inverse)
                tback = torch.istft(theirs, window=twindow, length=shape[-1], **inverse)
                assert back.dtype == (tensor.complex128 if complex_ else tensor.float64)
                assert_close(back, tback.numpy(), atol=1e-10, rtol=1e-10)
                if case.get("center", True):
                    assert_close(back, x, atol=1e-10)  # the round trip


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_stft_return_real_and_istft_default_length(torch):
    x = _signal((40,), False)
    ours = tensor.stft(tensor.tensor(x), 8, return_complex=False)
    assert_close(ours, torch.stft(torch.tensor(x), 8, return_complex=False).numpy(), atol=1e-12)
    spec = tensor.stft(tensor.tensor(x), 8, hop_length=2, return_complex=True)
    tspec = torch.tensor(spec.numpy())
    assert_close(tensor.istft(spec, 8, hop_length=2), torch.istft(tspec, 8, hop_length=2).numpy(), atol=1e-12)
    assert_close(tensor.istft(spec, 8, hop_length=2, length=50), torch.istft(tspec, 8, hop_length=2, length=50).numpy())


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_stft_istft_gradients(torch):
    x = _signal((2, 30), False)
    w = RNG.standard_normal((9, 11)) + 1j * RNG.standard_normal((9, 11))
    ours = tensor.tensor(x, requires_grad=True)
    theirs = torch.tensor(x, requires_grad=True)
    (tensor.stft(ours, 16, hop_length=3, return_complex=True) * tensor.tensor(w)).real.sum().backward()
    (torch.stft(theirs, 16, hop_length=3, return_complex=True) * torch.tensor(w)).real.sum().backward()
    assert_close(ours.grad, theirs.grad.numpy(), atol=1e-10)
    spec = tensor.stft(tensor.tensor(x), 16, hop_length=4, return_complex=True).detach().requires_grad_()
    tspec = torch.tensor(spec.detach().numpy(), requires_grad=True)
    weights = RNG.standard_normal((2, 30))
    (tensor.istft(spec, 16, hop_length=4, length=30) * tensor.tensor(weights)).sum().backward()
    (torch.istft(tspec, 16, hop_length=4, length=30) * torch.tensor(weights)).sum().backward()
    assert_close(spec.grad, tspec.grad.numpy(), atol=1e-10)
    base = _signal((4, 40), False)  # views (offset rows, a strided slice) without centring
    for view in (np.s_[1:3], np.s_[1:3, 5:], np.s_[::2, ::2]):
        ours, theirs = tensor.tensor(base, requires_grad=True), torch.tensor(base, requires_grad=True)
        out = tensor.stft(ours[view], 4, center=False, return_complex=True)
        tout = torch.stft(theirs[view], 4, center=False, return_complex=True)
        assert_close(out, tout.detach().numpy(), atol=1e-12)
        weights = RNG.standard_normal(tuple(tout.shape))
        (out.abs() * tensor.tensor(weights)).sum().backward()
        (tout.abs() * torch.tensor(weights)).sum().backward()
        assert_close(ours.grad, theirs.grad.numpy(), atol=1e-10)
    signal = tensor.tensor(_signal((20,), False), requires_grad=True)
    assert autograd.gradcheck(lambda s: tensor.view_as_real(tensor.stft(s, 8, return_complex=True)), (signal,))
    spectrum = tensor.stft(signal.detach(), 8, return_complex=True)
    as_real = tensor.view_as_real(spectrum).contiguous().detach().requires_grad_()
    assert autograd.gradcheck(lambda r: tensor.istft(tensor.view_as_complex(r), 8, length=20), (as_real,))


def test_stft_errors():
    x = tensor.ones(32)
    with pytest.raises(RuntimeError, match="requires the return_complex parameter"):
        tensor.stft(x, 8)
    with pytest.raises(RuntimeError, match="1D or 2D"):
        tensor.stft(tensor.ones(2, 2, 32), 8, return_complex=True)
    with pytest.raises(RuntimeError, match="hop_length > 0"):
        tensor.stft(x, 8, hop_length=0, return_complex=True)
    with pytest.raises(RuntimeError, match="win_length"):
        tensor.stft(x, 8, win_length=9, return_complex=True)
    with pytest.raises(RuntimeError, match="window tensor of size equal to win_length=8"):
        tensor.stft(x, 8, window=tensor.ones(5), return_complex=True)
    with pytest.raises(RuntimeError, match="pad_mode 'wrap'"):
        tensor.stft(x, 8, pad_mode="wrap", return_complex=True)
    with pytest.raises(RuntimeError, match="onesided"):
        tensor.stft(x.to(tensor.complex128), 8, onesided=True)
    with pytest.raises(RuntimeError, match="n_fft"):
        tensor.stft(x, 64, center=False, return_complex=True)
    with pytest.raises(RuntimeError, match="complex-valued input"):
        tensor.istft(tensor.ones(5, 3), 8)
    spec = tensor.stft(x, 8, return_complex=True)
    with pytest.raises(RuntimeError, match="n_fft // 2 \\+ 1 = 9"):
        tensor.istft(spec, 16)
    with pytest.raises(RuntimeError, match="NOLA"):
        tensor.istft(spec, 8, hop_length=8, window=tensor.hann_window(8, periodic=False))
