"""``DeviceMesh`` and ``init_device_mesh``: the ranks laid out as an n-d array, with one process
group per mesh dim, as ``torch.distributed.device_mesh``.

Note [Mesh groups]
------------------
Along dim ``d`` the ranks that differ only in their coordinate ``d`` form a group (for a
``(replicate, shard)`` mesh of 2 x 2: shard groups [0, 1] and [2, 3], replicate groups [0, 2]
and [1, 3]). ``new_group`` must be called by every rank for every group, in the same order, so
the constructor creates all of them, dim by dim in the mesh's row-major order, and keeps the one
that holds this rank. A sub-mesh (``mesh["shard"]``) reuses its parent's groups. ``fully_shard``
takes a 1-d mesh (its group) or a 2-d ``(replicate, shard)`` mesh (HSDP).
"""

from __future__ import annotations

import math

import numpy as np

import tensor

from .init_api import get_rank, get_world_size
from .process_group import new_group

__all__ = ["DeviceMesh", "init_device_mesh"]


class DeviceMesh:
    """The global ranks ``mesh`` (an n-d array, list or tensor of ints) on ``device_type``, with a
    process group per dim (Note [Mesh groups]). Every rank must construct it, with the same mesh.

    Raises:
        ValueError: for a mesh that repeats a rank, names a rank outside the world, or whose
            ``mesh_dim_names`` do not match its dims or repeat a name.
    """

    def __init__(self, device_type: str, mesh, *, mesh_dim_names: tuple[str, ...] | None = None,
                 _groups: list | None = None) -> None:
        ranks = np.asarray(mesh.tolist() if tensor.is_tensor(mesh) else mesh, dtype=np.int64)
        world = get_world_size()
        if len(set(ranks.flat)) != ranks.size or ranks.size and not (0 <= ranks.min() and ranks.max() < world):
            raise ValueError(f"DeviceMesh: the mesh {ranks.tolist()} must hold distinct ranks of the world of "
                             f"size {world}")
        if mesh_dim_names is not None:
            mesh_dim_names = tuple(mesh_dim_names)
            if len(mesh_dim_names) != ranks.ndim or len(set(mesh_dim_names)) != len(mesh_dim_names):
                raise ValueError(f"DeviceMesh: mesh_dim_names {mesh_dim_names} must name each of the mesh's "
                                 f"{ranks.ndim} dims once")
        self.device_type, self.mesh_dim_names = device_type, mesh_dim_names
        self._ranks = ranks
        where = np.argwhere(ranks == get_rank())
        self._coordinate = None if len(where) == 0 else [int(c) for c in where[0]]
        self._groups = _groups if _groups is not None else [self._make_group(d) for d in range(ranks.ndim)]

    def _make_group(self, dim: int):
        """Every group along ``dim`` (each rank calls ``new_group`` for all); this rank's one, or None."""
        moved = np.moveaxis(self._ranks, dim, -1).reshape(-1, self._ranks.shape[dim])
        mine = None
        for row in moved:
            group = new_group([int(r) for r in row])
            if self._coordinate is not None and get_rank() in row:
                mine = group
        return mine

    @property
    def mesh(self) -> tensor.Tensor:
        """The global ranks, as an int64 tensor of the mesh's shape."""
        return tensor.tensor(self._ranks.tolist(), dtype=tensor.int64)

    @property
    def ndim(self) -> int:
        """The number of mesh dims."""
        return self._ranks.ndim

    @property
    def shape(self) -> tuple[int, ...]:
        """The mesh's shape."""
        return tuple(self._ranks.shape)

    def size(self, mesh_dim: int | str | None = None) -> int:
        """The number of ranks in the mesh, or along ``mesh_dim``."""
        return self._ranks.size if mesh_dim is None else self._ranks.shape[self._dim(mesh_dim)]

    def _dim(self, mesh_dim: int | str | None) -> int:
        if mesh_dim is None:
            if self.ndim != 1:
                raise RuntimeError(f"Found the DeviceMesh have {self.ndim} mesh dims, mesh_dim must be specified")
            return 0
        if isinstance(mesh_dim, str):
            if not self.mesh_dim_names or mesh_dim not in self.mesh_dim_names:
                raise KeyError(f"Mesh dimension '{mesh_dim}' does not exist. Available mesh dimensions are: "
                               f"mesh_dim_names={self.mesh_dim_names}")
            return self.mesh_dim_names.index(mesh_dim)
        if not -self.ndim <= mesh_dim < self.ndim:
            raise IndexError(f"mesh_dim {mesh_dim} is out of range for a {self.ndim}-d mesh")
        return mesh_dim % self.ndim

    def get_group(self, mesh_dim: int | str | None = None):
        """This rank's process group along ``mesh_dim`` (which a 1-d mesh may omit).

        Raises:
            RuntimeError: without ``mesh_dim`` on a mesh of more than one dim, or on a rank not in the mesh.
            KeyError / IndexError: for an unknown dim name or index.
        """
        dim = self._dim(mesh_dim)
        if self._coordinate is None:
            raise RuntimeError(f"rank {get_rank()} is not in the DeviceMesh {self._ranks.tolist()}")
        return self._groups[dim]

    def get_all_groups(self) -> list:
        """This rank's groups, one per mesh dim."""
        return [self.get_group(d) for d in range(self.ndim)]

    def get_local_rank(self, mesh_dim: int | str | None = None) -> int:
        """This rank's coordinate along ``mesh_dim``."""
        dim = self._dim(mesh_dim)
        if self._coordinate is None:
            raise RuntimeError(f"rank {get_rank()} is not in the DeviceMesh {self._ranks.tolist()}")
        return self._coordinate[dim]

    def get_rank(self) -> int:
        """This process's global rank."""
        return get_rank()

    def get_coordinate(self) -> list[int] | None:
        """This rank's coordinates in the mesh, or None when it is not in it."""
        return None if self._coordinate is None else list(self._coordinate)

    def __getitem__(self, names) -> DeviceMesh:
        """The sub-mesh of the named dims (in the mesh's order) through this rank, sharing its groups.

        Raises:
            KeyError: for an unknown name, or names out of the mesh's order.
        """
        names = (names,) if isinstance(names, str) else tuple(names)
        dims = [self._dim(name) for name in names]
        if not isinstance(names[0], str) or dims != sorted(dims):
            raise KeyError(f"DeviceMesh: slice by dim names in the mesh's order, got {names}")
        if self._coordinate is None:
            raise RuntimeError(f"rank {get_rank()} is not in the DeviceMesh {self._ranks.tolist()}")
        index = tuple(slice(None) if d in dims else self._coordinate[d] for d in range(self.ndim))
        return DeviceMesh(self.device_type, self._ranks[index], mesh_dim_names=names,
                          _groups=[self._groups[d] for d in dims])

    def __repr__(self) -> str:
        names = "" if self.mesh_dim_names is None else f", mesh_dim_names={self.mesh_dim_names}"
        return f"DeviceMesh('{self.device_type}', {self._ranks.tolist()}{names})"


def init_device_mesh(device_type: str, mesh_shape: tuple[int, ...], *,
                     mesh_dim_names: tuple[str, ...] | None = None) -> DeviceMesh:
    """A mesh of every rank of the world, in order, shaped ``mesh_shape`` (the process group must
    be initialized). Every rank must call it.

    Raises:
        RuntimeError: when ``mesh_shape`` does not hold the world size, or ``mesh_dim_names``
            differs from it in length.
        ValueError: for a device type other than ``cpu`` or ``cuda``.
    """
    if device_type not in ("cpu", "cuda"):
        raise ValueError(f"init_device_mesh: device_type must be 'cpu' or 'cuda', got {device_type!r}")
    mesh_shape = tuple(int(s) for s in mesh_shape)
    if mesh_dim_names is not None and len(mesh_dim_names) != len(mesh_shape):
        raise RuntimeError("mesh_shape and mesh_dim_names should have same length!")
    world = get_world_size()
    if math.prod(mesh_shape) != world:
        raise RuntimeError(f"init_device_mesh: mesh_shape {mesh_shape} holds {math.prod(mesh_shape)} ranks, but "
                           f"the world has {world}")
    ranks = np.arange(world).reshape(mesh_shape) if mesh_shape else np.arange(world)
    return DeviceMesh(device_type, ranks, mesh_dim_names=mesh_dim_names)


def as_process_groups(mesh):
    """``fully_shard``'s ``mesh`` as process groups: a 1-d mesh's group, a 2-d mesh's
    ``(replicate group, shard group)``; anything else unchanged.

    Raises:
        ValueError: for a mesh of more than 2 dims.
    """
    if not isinstance(mesh, DeviceMesh):
        return mesh
    if mesh.ndim == 1:
        return mesh.get_group()
    if mesh.ndim == 2:
        return (mesh.get_group(0), mesh.get_group(1))
    raise ValueError(f"fully_shard: a mesh of 1 dim (FSDP) or 2 dims (HSDP) is expected, got {mesh.ndim}")
