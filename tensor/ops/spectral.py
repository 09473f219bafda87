"""``stft`` and ``istft``: short-time Fourier transforms as compositions of differentiable ops
(padding by slices and flips, overlapping frames as an ``as_strided`` view, as numpy's
``sliding_window_view``; the ``tensor.fft`` transforms; overlap-add by ``index_add``), so
gradients, complex inputs and every device come from those ops.
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import _dispatch, fft
from .complex_ops import real, view_as_complex, view_as_real
from .indexing import index_add
from .join_split import cat
from .layout import on_device

__all__ = ["stft", "istft"]

_PAD_MODES = ("constant", "reflect", "replicate", "circular")
_MAX_CHUNKS = 8  # overlap-add by shifted chunks up to this many chunks per frame (``_overlap``)


def _index(like, positions: np.ndarray):
    """The integer tensor ``positions`` on ``like``'s device."""
    return _dispatch.make(on_device(like._device, lambda xp: xp.asarray(positions)), like._device)


def _pad_signal(x, pad: int, mode: str):
    """``x`` padded by ``pad`` samples at both ends of its last dim, as ``F.pad`` with ``mode``."""
    if mode not in _PAD_MODES:
        raise RuntimeError(f"stft: unsupported pad_mode {mode!r}; expected one of {', '.join(_PAD_MODES)}")
    length = x.shape[-1]
    if (mode == "reflect" and pad >= length) or (mode == "circular" and pad > length):
        raise RuntimeError(
            f"stft: {mode} padding of {pad} needs a longer signal, got length {length}; "
            f"use center=False or pad_mode='constant'"
        )
    if mode == "constant":
        left = right = x.new_zeros(x.shape[:-1] + (pad,))
    elif mode == "reflect":
        left, right = x[..., 1 : pad + 1].flip(-1), x[..., length - pad - 1 : length - 1].flip(-1)
    elif mode == "replicate":
        left, right = (x[..., edge].unsqueeze(-1).expand(x.shape[:-1] + (pad,)) for edge in (0, -1))
    else:
        left, right = x[..., length - pad :], x[..., :pad]
    return cat([left, x, right], -1)


def _full_window(window, win_length: int, n_fft: int, like):
    """The window (ones by default) of ``win_length`` samples centred in ``n_fft`` samples."""
    if window is None:
        window = real(like.new_ones(win_length))
    elif window.ndim != 1 or window.shape[0] != win_length:
        raise RuntimeError(
            f"stft: expected a 1D window tensor of size equal to win_length={win_length}, "
            f"but got window with size {list(window.shape)}"
        )
    left = (n_fft - win_length) // 2
    if left or n_fft != win_length:
        window = cat([window.new_zeros(left), window, window.new_zeros(n_fft - win_length - left)], 0)
    return window


def _lengths(n_fft, hop_length, win_length):
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    if hop_length <= 0:
        raise RuntimeError(f"stft: expected hop_length > 0, but got hop_length={hop_length}")
    if not 0 < win_length <= n_fft:
        raise RuntimeError(f"stft: expected 0 < win_length <= n_fft, but got win_length={win_length}")
    return hop_length, win_length


def stft(
    input,
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window=None,
    center: bool = True,
    pad_mode: str = "reflect",
    normalized: bool = False,
    onesided: bool | None = None,
    return_complex: bool | None = None,
):
    """The short-time Fourier transform of a signal (``(L,)`` or ``(B, L)``), as ``torch.stft``:
    ``(B?, n_freq, n_frames)`` complex (``return_complex=False``: real with a last dim of 2).

    Frames of ``n_fft`` samples, ``hop_length`` apart, are multiplied by ``window`` (centred and
    zero-padded to ``n_fft``); ``center`` pads the signal by ``n_fft // 2`` with ``pad_mode``;
    ``normalized`` scales by ``n_fft ** -0.5``; ``onesided`` (the default for real input and
    window) keeps ``n_fft // 2 + 1`` frequencies.

        >>> import tensor
        >>> tensor.stft(tensor.ones(8), 4, return_complex=True).shape  # 3 frequencies, 9 frames
        (3, 9)

    Raises:
        RuntimeError: for a real input without ``return_complex``, a bad rank, ``n_fft``,
            ``hop_length``, ``win_length``, window size or ``pad_mode``, or a onesided complex input.
    """
    complex_input = input.dtype.is_complex or (window is not None and window.dtype.is_complex)
    if return_complex is None:
        if not complex_input:
            raise RuntimeError(
                "stft requires the return_complex parameter be given for real inputs, and will further "
                "require that return_complex=True in a future PyTorch release."
            )
        return_complex = True
    if input.ndim not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got a {input.ndim}D tensor")
    hop_length, win_length = _lengths(n_fft, hop_length, win_length)
    x = input.unsqueeze(0) if input.ndim == 1 else input
    if center:
        x = _pad_signal(x, n_fft // 2, pad_mode)
    if not 0 < n_fft <= x.shape[-1]:
        raise RuntimeError(f"stft: expected 0 < n_fft <= {x.shape[-1]}, but got n_fft={n_fft}")
    x = x.contiguous()
    length = x.shape[-1]
    frames = x.as_strided((x.shape[0], (length - n_fft) // hop_length + 1, n_fft), (length, hop_length, 1))
    frames = frames * _full_window(window, win_length, n_fft, x)
    onesided = not complex_input if onesided is None else onesided
    if onesided and complex_input:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    norm = "ortho" if normalized else "backward"
    spectrum = (fft.rfft if onesided else fft.fft)(frames, dim=-1, norm=norm).transpose(-1, -2)
    spectrum = spectrum.squeeze(0) if input.ndim == 1 else spectrum
    if not return_complex:
        warnings.warn("stft with return_complex=False is deprecated", UserWarning, stacklevel=2)
        return view_as_real(spectrum)
    return spectrum


def istft(
    input,
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window=None,
    center: bool = True,
    normalized: bool = False,
    onesided: bool | None = None,
    length: int | None = None,
    return_complex: bool = False,
):
    """The inverse of ``stft`` (least-squares overlap-add, as ``torch.istft``): ``input`` is the
    complex ``(B?, n_freq, n_frames)`` spectrum; the signal is trimmed or zero-padded to ``length``.

    Raises:
        RuntimeError: for a real input, a frequency count that does not match ``n_fft`` and
            ``onesided``, bad lengths, or a window whose overlap-add vanishes somewhere (NOLA).
    """
    if not input.dtype.is_complex:
        if input.shape and input.shape[-1] == 2:
            input = view_as_complex(input)
        else:
            raise RuntimeError("istft requires a complex-valued input tensor")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex, got {input.ndim}")
    hop_length, win_length = _lengths(n_fft, hop_length, win_length)
    spec = input.unsqueeze(0) if input.ndim == 2 else input
    n_freq, n_frames = spec.shape[-2:]
    onesided = n_freq != n_fft if onesided is None else onesided
    if onesided and n_freq != n_fft // 2 + 1:
        raise RuntimeError(
            f"istft: expected the frequency dimension (size {n_freq}) to equal n_fft // 2 + 1 = {n_fft // 2 + 1}"
        )
    if not onesided and n_freq != n_fft:
        raise RuntimeError(
            f"istft: expected the frequency dimension (size {n_freq}) to equal n_fft = {n_fft} when onesided=False"
        )
    if return_complex and onesided:
        raise RuntimeError("istft: cannot have onesided output if return_complex is True")
    norm = "ortho" if normalized else "backward"
    spec = spec.transpose(-1, -2)
    frames = fft.irfft(spec, n=n_fft, dim=-1, norm=norm) if onesided else fft.ifft(spec, dim=-1, norm=norm)
    if not (onesided or return_complex):
        frames = real(frames)
    window = _full_window(window, win_length, n_fft, frames)
    signal, envelope = _overlap_add(frames * window, window * window, hop_length)
    start = n_fft // 2 if center else 0
    full = signal.shape[-1]
    end = start + length if length is not None else (full - n_fft // 2 if center else full)
    signal, envelope = signal[..., start:end], envelope[start:end]
    if envelope.numel() and float(envelope.abs().amin()) < 1e-11:
        raise RuntimeError(f"istft: window overlap add min: {float(envelope.abs().amin())} (the window fails NOLA)")
    signal = signal / envelope
    if length is not None and signal.shape[-1] < length:
        signal = cat([signal, signal.new_zeros(signal.shape[:-1] + (length - signal.shape[-1],))], -1)
    return signal.squeeze(0) if input.ndim == 2 else signal


def _overlap_add(frames, window_sq, hop: int):
    """Sum ``frames`` (..., n_frames, n_fft) at offsets ``hop`` apart; also the squared window's sum."""
    n_frames, n_fft = frames.shape[-2:]
    return _overlap(frames, hop), _overlap(window_sq.expand(n_frames, n_fft), hop)


def _overlap(frames, hop: int):
    """Overlap-add: frames cut into ``ceil(n_fft / hop)`` hop-long chunks, chunk ``c`` of every frame
    shifted by ``c`` blocks and summed (one add per chunk; 15x faster than ``index_add`` for a
    quarter hop); for many chunks per frame, one ``index_add`` of every sample."""
    n_frames, n_fft = frames.shape[-2:]
    batch = frames.shape[:-2]
    total = n_fft + hop * (n_frames - 1)
    chunks = -(-n_fft // hop)
    if chunks > _MAX_CHUNKS:
        positions = (np.arange(n_frames)[:, None] * hop + np.arange(n_fft)).reshape(-1)
        return index_add(frames.new_zeros(batch + (total,)), -1, _index(frames, positions), frames.flatten(-2))
    if chunks * hop != n_fft:
        frames = cat([frames, frames.new_zeros(batch + (n_frames, chunks * hop - n_fft))], -1)
    blocks = frames.reshape(batch + (n_frames, chunks, hop))
    out = None
    for c in range(chunks):
        part = blocks[..., c, :]
        shifted = cat([part.new_zeros(batch + (c, hop)), part, part.new_zeros(batch + (chunks - 1 - c, hop))], -2)
        out = shifted if out is None else out + shifted
    return out.reshape(batch + ((n_frames + chunks - 1) * hop,))[..., :total]
