"""Issue 16, the LU/LDL/Householder family, stft/istft, lobpcg and eig's backward, side by side
with torch CPU (LAPACK) and, for stft, with the numpy calls it wraps (reflect pad, strided frames,
windowed rfft). Run by ``scripts/bench.py --only linalg``."""

from __future__ import annotations

import numpy as np

import tensor

try:
    import torch
except ImportError:  # the peer is optional
    torch = None


def _numpy_stft(x, n_fft, hop, window):
    padded = np.pad(x, n_fft // 2, mode="reflect")
    frames = np.lib.stride_tricks.sliding_window_view(padded, n_fft)[::hop]
    return np.fft.rfft(frames * window, axis=-1).T


def _torch_cases(rng):
    a = rng.standard_normal((256, 256))
    batch = rng.standard_normal((64, 32, 32))
    rhs = rng.standard_normal((256, 16))
    sym = rng.standard_normal((64, 64))
    sym = sym + sym.T
    small, syms = rng.standard_normal((128, 128)), rng.standard_normal((16, 64, 64))
    syms = syms + syms.swapaxes(-1, -2)
    reflectors, tau = rng.standard_normal((128, 64)), rng.standard_normal(64)
    general = rng.standard_normal((64, 64))
    q, _ = np.linalg.qr(rng.standard_normal((200, 200)))
    spd = (q * np.linspace(1, 100, 200)) @ q.T
    ours_lu = tensor.linalg.lu_factor(tensor.from_numpy(a))
    theirs_lu = torch.linalg.lu_factor(torch.from_numpy(a))

    def eig_backward(lib, m):
        m = lib.tensor(m, requires_grad=True)
        values = lib.linalg.eigvals(m)
        (values.real.sum() + values.imag.abs().sum()).backward()

    def both(fn, *arrays):
        return (
            lambda: fn(tensor, *(tensor.from_numpy(v) for v in arrays)),
            lambda: fn(torch, *(torch.from_numpy(v) for v in arrays)),
        )

    return [
        ("linalg.lu_factor 256x256 float64", *both(lambda lib, m: lib.linalg.lu_factor(m), a)),
        ("linalg.lu_factor 128x128 float64", *both(lambda lib, m: lib.linalg.lu_factor(m), small)),
        ("linalg.lu_factor 64 x 32x32 float64", *both(lambda lib, m: lib.linalg.lu_factor(m), batch)),
        (
            "linalg.lu_solve 256x256, 16 rhs",
            lambda: tensor.linalg.lu_solve(*ours_lu, tensor.from_numpy(rhs)),
            lambda: torch.linalg.lu_solve(*theirs_lu, torch.from_numpy(rhs)),
        ),
        ("linalg.ldl_factor 64x64 float64", *both(lambda lib, m: lib.linalg.ldl_factor(m), sym)),
        ("linalg.ldl_factor 16 x 64x64 float64", *both(lambda lib, m: lib.linalg.ldl_factor(m), syms)),
        (
            "linalg.householder_product 128x64",
            *both(lambda lib, m, t: lib.linalg.householder_product(m, t), reflectors, tau),
        ),
        (
            "linalg.eigvals + backward 64x64",
            lambda: eig_backward(tensor, general),
            lambda: eig_backward(torch, general),
        ),
        ("lobpcg k=2 of 200x200 float64", *both(lambda lib, m: lib.lobpcg(m, k=2), spd)),
    ]


def bench(repeat: int, paired_times, have_torch: bool) -> list:
    """(workload, ours ms, peer ms, peer, target) rows."""
    rng = np.random.default_rng(16)
    signal = rng.standard_normal(16000).astype(np.float32)
    window = np.hanning(513)[:-1].astype(np.float32)  # periodic Hann, as torch.hann_window
    st, wt = tensor.from_numpy(signal), tensor.from_numpy(window)
    rows = []
    ours, peer = paired_times(
        lambda: tensor.stft(st, 512, 128, window=wt, return_complex=True),
        lambda: _numpy_stft(signal, 512, 128, window),
        repeat,
    )
    rows.append(("stft 16000 float32, n_fft 512, hop 128 (ms)", ours * 1e3, peer * 1e3, "numpy", "<= 1.2x"))
    if not (have_torch and torch is not None):
        return rows
    spec = tensor.stft(st, 512, 128, window=wt, return_complex=True)
    tsig, twin = torch.from_numpy(signal), torch.from_numpy(window)
    tspec = torch.stft(tsig, 512, 128, window=twin, return_complex=True)
    cases = [
        (
            "stft 16000 float32, n_fft 512, hop 128",
            lambda: tensor.stft(st, 512, 128, window=wt, return_complex=True),
            lambda: torch.stft(tsig, 512, 128, window=twin, return_complex=True),
        ),
        (
            "istft of the same",
            lambda: tensor.istft(spec, 512, 128, window=wt),
            lambda: torch.istft(tspec, 512, 128, window=twin),
        ),
        *_torch_cases(rng),
    ]
    for name, ours_fn, torch_fn in cases:
        ours, peer = paired_times(ours_fn, torch_fn, repeat)
        rows.append((f"{name} (ms)", ours * 1e3, peer * 1e3, "torch", "info"))
    return rows
