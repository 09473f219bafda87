"""Layers, one family per module, all re-exported by ``nn``."""

from .activation import *  # noqa: F401,F403
from .activation_extra import *  # noqa: F401,F403
from .adaptive import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .container import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .flatten import *  # noqa: F401,F403
from .lazy import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .loss_extra import *  # noqa: F401,F403
from .misc import *  # noqa: F401,F403
from .module import IncompatibleKeys, Module  # noqa: F401
from .normalization import *  # noqa: F401,F403
from .normalization_extra import *  # noqa: F401,F403
from .padding import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .pooling_extra import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .sampling import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .sync_batchnorm import *  # noqa: F401,F403
from .transformer import *  # noqa: F401,F403
from .transformer_decoder import *  # noqa: F401,F403
