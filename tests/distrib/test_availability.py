"""Backend names and availability, launch detection: PyTorch's helpers under the same names."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

import distrib as dist
import tensor


@pytest.mark.parametrize(("name", "expected"), [("MPI", "mpi"), ("gloo", "gloo"), ("Nccl", "nccl"),
                                                 ("zmq", "zmq"), ("MyBackend", "mybackend")])
def test_backend_names_are_lowercased_strings(name, expected):
    value = dist.Backend(name)
    assert value == expected and isinstance(value, str)


def test_backend_constants_and_bad_type():
    assert (dist.Backend.ZMQ, dist.Backend.GLOO, dist.Backend.MPI, dist.Backend.NCCL) == ("zmq", "gloo", "mpi", "nccl")
    assert dist.Backend.UNDEFINED in dist.Backend.backend_list
    with pytest.raises(ValueError, match="string-ish, got int"):
        dist.Backend(3)


def test_init_accepts_a_backend_constant():
    dist.init_process_group(dist.Backend.GLOO, init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
    try:
        assert dist.get_backend() == "gloo"  # as PyTorch says; zmq serves it
        assert dist.group.WORLD.backend.name == "zmq"
    finally:
        dist.destroy_process_group()


def test_availability_follows_the_installed_libraries():
    has_mpi4py = importlib.util.find_spec("mpi4py") is not None
    assert dist.is_backend_available("zmq") and dist.is_gloo_available()
    assert dist.is_mpi_available() is has_mpi4py
    assert dist.is_backend_available("MPI") is has_mpi4py
    assert not dist.is_backend_available("no-such-backend")
    assert not dist.is_ucc_available() and not dist.is_xccl_available()
    assert dist.is_backend_available("cpu:gloo,cuda:nccl") is dist.is_nccl_available()
    assert dist.is_backend_available("cpu:zmq")


def test_nccl_unavailable_without_cupy():
    if importlib.util.find_spec("cupy") is not None:
        pytest.skip("cupy is installed: NCCL availability depends on its build")
    assert dist.is_nccl_available() is False


def test_mpi_check_does_not_initialise_mpi():
    """Importing mpi4py.MPI starts MPI (and, under a launcher, may block): the check must not."""
    code = ("import sys, distrib as dist; ok = dist.is_mpi_available(); "
            "print(ok, 'mpi4py.MPI' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == [str(importlib.util.find_spec("mpi4py") is not None), "False"]


def test_torchelastic_launched_follows_the_run_id(monkeypatch):
    monkeypatch.delenv("TORCHELASTIC_RUN_ID", raising=False)
    assert dist.is_torchelastic_launched() is False
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "job1")
    assert dist.is_torchelastic_launched() is True


def test_node_local_rank(monkeypatch):
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    assert dist.get_node_local_rank(fallback_rank=2) == 2
    with pytest.raises(RuntimeError, match="LOCAL_RANK is not in the environment"):
        dist.get_node_local_rank()
    monkeypatch.setenv("LOCAL_RANK", "3")
    assert dist.get_node_local_rank(fallback_rank=0) == 3


@pytest.mark.parametrize(("device", "expected"), [("cpu", "zmq"), ("cuda", "nccl"), ("cuda:1", "nccl"),
                                                   (tensor.device("cpu"), "zmq")])
def test_default_backend_for_device(device, expected):
    assert dist.get_default_backend_for_device(device) == expected


def test_default_backend_for_unknown_device_names_it():
    with pytest.raises(ValueError, match="'xla'"):
        dist.get_default_backend_for_device("xla:0")
