"""``nn.functional``: the functional form of every layer, and the losses."""

from .activation import *  # noqa: F401,F403
from .activation_extra import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .ctc import *  # noqa: F401,F403
from .distance import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .embedding_bag import *  # noqa: F401,F403
from .fractional_pool import *  # noqa: F401,F403
from .grid_sampling import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .loss_extra import *  # noqa: F401,F403
from .misc import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .normalization_extra import *  # noqa: F401,F403
from .padding import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .pooling_extra import *  # noqa: F401,F403
from .sampling import *  # noqa: F401,F403
from .shuffle import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
