"""DeviceMesh / init_device_mesh (Note [Mesh groups]): the groups along each dim of a 1-d and a
2x2 mesh, coordinates, sub-meshes and argument errors. fully_shard over a mesh runs in
test_fsdp.py (the ``fully_shard_device_mesh`` and ``fully_shard_hsdp_mesh`` variants)."""

from __future__ import annotations

import pytest

import distrib as dist
from tests.distrib._harness import case_results
from tests.distrib._sharding_harness import run_config


@pytest.mark.parametrize("size", [2, 4])
def test_mesh_groups(size):
    results = case_results(run_config("device_mesh", "zmq-shm", size), "device_mesh_layout")
    for rank, r in enumerate(results):
        assert r["flat"] == [size, rank, list(range(size))]
    if size != 4:
        return
    for rank, r in enumerate(results):
        row, col = divmod(rank, 2)
        grid = r["grid"]
        assert grid["coordinate"] == [row, col]
        assert grid["groups"] == [[col, col + 2], [2 * row, 2 * row + 1]]  # replicate, shard
        assert grid["sums"] == {"replicate": float(2 * col + 2), "shard": float(4 * row + 1)}
        assert grid["sub_mesh"] == [[2 * row, 2 * row + 1], col, True]
        assert grid["repr"] == "DeviceMesh('cpu', [[0, 1], [2, 3]], mesh_dim_names=('replicate', 'shard'))"


def test_argument_errors(world_of_one):
    with pytest.raises(RuntimeError, match="holds 2 ranks, but the world has 1"):
        dist.init_device_mesh("cpu", (2,))
    with pytest.raises(RuntimeError, match="same length"):
        dist.init_device_mesh("cpu", (1,), mesh_dim_names=("a", "b"))
    with pytest.raises(ValueError, match="device_type must be 'cpu' or 'cuda'"):
        dist.init_device_mesh("tpu", (1,))
    mesh = dist.init_device_mesh("cpu", (1, 1), mesh_dim_names=("dp", "tp"))
    with pytest.raises(RuntimeError, match="mesh_dim must be specified"):
        mesh.get_group()
    with pytest.raises(KeyError, match="'pp' does not exist"):
        mesh.get_group("pp")
    with pytest.raises(ValueError, match="distinct ranks"):
        dist.DeviceMesh("cpu", [0, 0])
    assert mesh.size() == 1 and mesh.shape == (1, 1) and mesh.get_local_rank("tp") == 0
