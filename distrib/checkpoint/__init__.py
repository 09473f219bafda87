"""``distrib.checkpoint``: sharded checkpoints that load on any number of ranks. Our
``torch.distributed.checkpoint`` (Note [Distributed checkpoint layout] in ``_storage.py``).

    model_sd, optim_sd = get_state_dict(model, optimizer)
    save({"model": model_sd, "optim": optim_sd}, checkpoint_id="ckpt")
    ...
    model_sd, optim_sd = get_state_dict(model, optimizer)   # on the new job, any world size
    load({"model": model_sd, "optim": optim_sd}, checkpoint_id="ckpt")
    set_state_dict(model, optimizer, model_state_dict=model_sd, optim_state_dict=optim_sd)
"""

from ._sharded import ShardedTensor
from ._storage import async_save, load, save
from .state_dict import get_model_state_dict, get_optimizer_state_dict, get_state_dict, set_state_dict

__all__ = [
    "ShardedTensor",
    "save",
    "async_save",
    "load",
    "get_state_dict",
    "set_state_dict",
    "get_model_state_dict",
    "get_optimizer_state_dict",
]
