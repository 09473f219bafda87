"""``nn.optim``: the optimizers SGD, Adam, AdamW, RMSprop, Adagrad, Adafactor, Adamax, Adadelta,
NAdam, RAdam, ASGD, Rprop, LBFGS, Muon and SparseAdam, and (in ``lr_scheduler``)
learning-rate schedulers, with ``torch.optim``'s names and arguments.

    >>> opt = nn.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    >>> opt.zero_grad(); loss.backward(); opt.step()
"""

from . import lr_scheduler, swa_utils
from ._stateless import swap_in_optimizer_params_and_state
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .asgd import ASGD
from .lbfgs import LBFGS
from .muon import Muon
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adafactor", "Adamax", "Adadelta", "NAdam",
           "RAdam", "ASGD", "Rprop", "LBFGS", "Muon", "SparseAdam", "lr_scheduler", "swa_utils",
           "swap_in_optimizer_params_and_state"]
