"""Where the hub keeps its files: ``get_dir`` and ``set_dir``."""

from __future__ import annotations

import os

__all__ = ["get_dir", "set_dir"]

ENV_HUB_DIR = "DISTRIB_HUB_DIR"
ENV_XDG_CACHE_HOME = "XDG_CACHE_HOME"
DEFAULT_CACHE_DIR = os.path.join("~", ".cache")

_hub_dir: str | None = None


def get_dir() -> str:
    """Return the hub cache directory (it is created on first use, not here).

    In order of precedence: the directory given to ``set_dir``; the
    ``DISTRIB_HUB_DIR`` environment variable; ``$XDG_CACHE_HOME/distrib/hub``;
    ``~/.cache/distrib/hub``. Cloned repositories go in sub-directories named
    ``owner_repo_ref``, downloaded weights in ``checkpoints/``.
    """
    if _hub_dir is not None:
        return _hub_dir
    from_env = os.getenv(ENV_HUB_DIR)
    if from_env:
        return os.path.expanduser(from_env)
    cache_home = os.getenv(ENV_XDG_CACHE_HOME) or DEFAULT_CACHE_DIR
    return os.path.join(os.path.expanduser(cache_home), "distrib", "hub")


def set_dir(d: str | os.PathLike | None) -> None:
    """Use ``d`` as the hub cache directory from now on (``~`` is expanded).

    It takes precedence over ``DISTRIB_HUB_DIR``; ``set_dir(None)`` goes back to
    the environment variable or the default.

    Raises:
        TypeError: if ``d`` is not a path or None.
    """
    global _hub_dir
    if d is not None and not isinstance(d, (str, os.PathLike)):
        raise TypeError(f"set_dir expects a path or None, got {type(d).__name__}")
    _hub_dir = None if d is None else os.path.expanduser(os.fspath(d))
