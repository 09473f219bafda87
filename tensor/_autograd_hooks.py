"""The seam between ``tensor`` and ``autograd``.

``tensor`` never imports ``autograd`` at module level. Ops call ``api.record``
when an input requires grad, and ``Tensor.backward`` calls ``api.run_backward``.
``autograd`` fills ``api`` in when it is imported (``autograd._install``). The
first use of any entry imports ``autograd``, so ``import tensor`` alone is
enough to train.

The grad-mode flags are reached from here too, because every op reads them. They are
thread-local, as in PyTorch (tensor/_grad_state.py).
"""

from __future__ import annotations

import importlib

from ._grad_state import grad_mode  # noqa: F401 - re-exported: the modules above read it here


class _AutogradApi:
    """The entry points that ``autograd`` installs: record, run_backward, rebase_history,
    register_hook, register_post_accumulate_grad_hook, retain_grad, the grad-mode contexts and
    ``grad``."""

    def __getattr__(self, name: str):
        ensure_autograd()
        try:
            return self.__dict__[name]
        except KeyError:
            raise AttributeError(f"autograd did not install {name!r}") from None


api = _AutogradApi()


def ensure_autograd() -> None:
    """Import ``autograd`` so that it fills in ``api``."""
    importlib.import_module("autograd")
