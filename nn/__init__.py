"""``nn``: modules, functional ops, initialisation, optimizers and hub. Our ``torch.nn``.

``nn.optim`` is the counterpart of ``torch.optim`` and ``nn.hub`` of ``torch.hub``.
"""

from . import functional, hub, init, optim, parallel, utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import IncompatibleKeys, Module  # noqa: F401
from .parameter import Buffer, Parameter  # noqa: F401
