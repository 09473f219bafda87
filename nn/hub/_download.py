"""Downloading weights: ``download_url_to_file`` and ``load_state_dict_from_url``."""

from __future__ import annotations

import hashlib
import os
import re
import sys
import uuid
import warnings
from typing import Any
from urllib.parse import urlparse
from urllib.request import Request, urlopen

import tensor

from ._dirs import get_dir

__all__ = ["download_url_to_file", "load_state_dict_from_url"]

# ``name-<sha256 prefix>.ext``, the convention torch.hub uses for checkpoint file names.
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")
READ_DATA_CHUNK = 128 * 1024


class _Progress:
    """A one-line byte counter on stderr, redrawn in place."""

    def __init__(self, total: int | None, enabled: bool) -> None:
        self.total, self.enabled, self.done, self.shown = total, enabled, 0, -1

    def update(self, n: int) -> None:
        self.done += n
        if not self.enabled:
            return
        if self.total:
            percent = min(100, self.done * 100 // self.total)
            if percent != self.shown:
                self.shown = percent
                sys.stderr.write(f"\r{percent:3d}% {_human(self.done)}/{_human(self.total)}")
        else:
            sys.stderr.write(f"\r{_human(self.done)}")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f}{unit}" if unit == "B" else f"{n:.1f}{unit}"
        n /= 1024
    return f"{n}B"  # pragma: no cover - the loop always returns


def download_url_to_file(url: str, dst: str | os.PathLike, hash_prefix: str | None = None,
                         progress: bool = True) -> None:
    """Download ``url`` (http, https, ftp or file) to the path ``dst``.

    The data goes to a temporary ``dst.<random>.partial`` file next to ``dst``,
    which is renamed over ``dst`` only once complete (and, with ``hash_prefix``,
    verified), so ``dst`` is never half-written. ``progress`` draws a byte
    counter on stderr.

    Raises:
        RuntimeError: if ``hash_prefix`` is given and the SHA-256 of the data does
            not start with it; the partial file is removed.
        urllib.error.URLError: if the URL cannot be opened.
    """
    dst = os.path.expanduser(os.fspath(dst))
    with urlopen(Request(url, headers={"User-Agent": "distrib.hub"})) as response:
        length = response.headers.get("Content-Length")
        bar = _Progress(int(length) if length and length.isdigit() else None, progress)
        tmp_dst = f"{dst}.{uuid.uuid4().hex}.partial"
        sha256 = hashlib.sha256()
        try:
            with open(tmp_dst, "xb") as out:
                while buffer := response.read(READ_DATA_CHUNK):
                    out.write(buffer)
                    sha256.update(buffer)
                    bar.update(len(buffer))
            bar.close()
            if hash_prefix is not None:
                digest = sha256.hexdigest()
                if not digest.startswith(hash_prefix):
                    raise RuntimeError(
                        f'invalid hash value for {url} (expected prefix "{hash_prefix}", got "{digest}")'
                    )
            os.replace(tmp_dst, dst)
        finally:
            if os.path.exists(tmp_dst):
                os.remove(tmp_dst)


def load_state_dict_from_url(url: str, model_dir: str | os.PathLike | None = None, map_location: Any = None,
                             progress: bool = True, check_hash: bool = False, file_name: str | None = None,
                             weights_only: bool = True) -> Any:
    """Download the checkpoint at ``url`` once and load it with ``tensor.load``.

    The file is cached as ``model_dir/<file name>`` (``model_dir`` defaults to
    ``get_dir()/checkpoints``; the name is the last part of the URL path unless
    ``file_name`` is given) and later calls load the cached copy. With
    ``check_hash``, the file name must follow the ``name-<sha256 prefix>.ext``
    convention and the download must match that prefix (a name without one only
    gets a warning, as in torch). ``map_location`` and ``weights_only`` go to
    ``tensor.load``.

    Raises:
        ValueError: if no file name can be derived from ``url`` and none is given.
        RuntimeError: on a hash mismatch (nothing is cached), or if the file is
            not a distrib checkpoint.
        urllib.error.URLError: if the URL cannot be opened.
        pickle.UnpicklingError: if the file holds arbitrary objects and ``weights_only`` is True.
    """
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    model_dir = os.path.expanduser(os.fspath(model_dir))
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name if file_name is not None else os.path.basename(urlparse(url).path)
    if not filename:
        raise ValueError(f"cannot derive a file name from the URL {url!r}: pass file_name=")
    cached_file = os.path.join(model_dir, filename)
    if not os.path.exists(cached_file):
        sys.stderr.write(f'Downloading: "{url}" to {cached_file}\n')
        hash_prefix = None
        if check_hash:
            match = HASH_REGEX.search(filename)
            hash_prefix = match.group(1) if match and match.group(1) else None
            if hash_prefix is None:
                warnings.warn(f"check_hash=True but the file name {filename!r} carries no SHA-256 prefix "
                              "(expected 'name-<sha256 prefix>.ext'): the hash is not checked", stacklevel=2)
        download_url_to_file(url, cached_file, hash_prefix, progress=progress)
    return tensor.load(cached_file, map_location=map_location, weights_only=weights_only)
