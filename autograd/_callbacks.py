"""``queue_callback``: run a function once the current backward pass has finished propagating.

Apart from the engine so that ``autograd.graph`` (which the engine imports) can queue callbacks too
(``register_multi_grad_hook``).
"""

from __future__ import annotations

import threading

__all__ = ["queue_callback"]

# The callbacks queued during the backward pass running in this thread (``queued.queue``, a list,
# set by the engine); None outside backward. A stack, as a hook may itself run a nested backward.
queued = threading.local()


def queue_callback(callback) -> None:
    """Run ``callback()`` once the current backward pass has finished propagating (after the
    last leaf's gradient was accumulated), before ``backward`` returns. As PyTorch's
    ``Variable._execution_engine.queue_callback``; DDP waits for its all-reduces there.

    Raises:
        RuntimeError: when no backward pass is running in this thread.
    """
    queue = getattr(queued, "queue", None)
    if queue is None:
        raise RuntimeError("queue_callback can only be called during the backward pass (e.g. from a tensor hook)")
    queue.append(callback)
