"""``distrib``: our ``torch.distributed``. Use it as ``import distrib as dist``.

    >>> import distrib as dist, tensor
    >>> dist.init_process_group("zmq", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
    >>> t = tensor.ones(3); dist.all_reduce(t); t
    tensor([1., 1., 1.])
    >>> dist.destroy_process_group()

Subpackages: ``distrib.multiprocessing`` (torch.multiprocessing) and ``distrib.data``
(torch.utils.data) are imported on first use, not here.
"""

from . import backends, store
from .availability import (
    Backend,
    get_default_backend_for_device,
    get_node_local_rank,
    is_backend_available,
    is_gloo_available,
    is_mpi_available,
    is_nccl_available,
    is_torchelastic_launched,
    is_ucc_available,
    is_xccl_available,
)
from .collectives import (
    all_gather,
    all_gather_into_tensor,
    all_reduce,
    all_to_all,
    all_to_all_single,
    barrier,
    broadcast,
    gather,
    monitored_barrier,
    reduce,
    reduce_scatter,
    reduce_scatter_tensor,
    scatter,
)
from .device_mesh import DeviceMesh, init_device_mesh
from .errors import DistBackendError, DistError, DistNetworkError, DistStoreError
from .init_api import (
    default_pg_timeout,
    destroy_process_group,
    get_backend,
    get_global_rank,
    get_group_rank,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    init_process_group,
    is_available,
    is_initialized,
)
from .object_collectives import (
    all_gather_object,
    broadcast_object_list,
    gather_object,
    recv_object_list,
    scatter_object_list,
    send_object_list,
)
from .p2p import P2POp, batch_isend_irecv, irecv, isend, recv, send
from .process_group import GroupMember, ProcessGroup, new_group
from .reduce_op import ReduceOp
from .store import FileStore, HashStore, PrefixStore, Store, TCPStore
from .work import Future, Work

group = GroupMember  # torch.distributed.group.WORLD

from . import algorithms, parallel  # noqa: E402 - DDP and Join build on the collectives above
from ._nn_hooks import install as _install_nn_hooks  # noqa: E402
from .parallel import DistributedDataParallel  # noqa: E402

_install_nn_hooks()  # nn.SyncBatchNorm's all_reduce (nn/_distrib_hooks.py)
