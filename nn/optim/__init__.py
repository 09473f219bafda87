"""``nn.optim``: the optimizers SGD, Adam, AdamW, RMSprop and Adagrad, and (in ``lr_scheduler``)
learning-rate schedulers, with ``torch.optim``'s names and arguments.

    >>> opt = nn.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    >>> opt.zero_grad(); loss.backward(); opt.step()
"""

from . import lr_scheduler
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "lr_scheduler"]
