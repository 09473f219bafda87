"""The ``mpi`` backend beyond the conformance suite: sub-groups, big objects, dtypes MPI lacks,
misuse outside ``mpiexec``, CUDA-aware detection and the abort hook.

Multi-rank checks run under ``mpiexec`` (see ``_mpi_harness``); the detection and hook
checks use stand-in ``mpi`` modules in this process (importing mpi4py here would start MPI).
"""

from __future__ import annotations

import sys
import types

import pytest

from tests.distrib._mpi_harness import needs_mpi, run_mpi, run_without_mpiexec


@needs_mpi
def test_overlapping_subgroups_get_their_own_communicators(tmp_path):
    run = run_mpi("subgroups", 3, tmp_path, timeout=60)
    assert run.returncode == 0, run.stderr[-3000:]
    r0, r1, r2 = (run.result(r) for r in range(3))
    assert r0["backend"] == "mpi"
    assert r0["low"] == {"member": True, "rank": 0, "sum": [11.0] * 3, "gathered": [0.0, 1.0], "src": None,
                         "got": None}
    assert r1["low"] == {"member": True, "rank": 1, "sum": [11.0] * 3, "gathered": [0.0, 1.0], "src": 0,
                         "got": [0.0, 0.0]}
    assert r1["high"] == {"member": True, "rank": 0, "sum": [110.0] * 3, "gathered": [1.0, 2.0], "src": None,
                          "got": None}
    assert r2["high"] == {"member": True, "rank": 1, "sum": [110.0] * 3, "gathered": [1.0, 2.0], "src": 1,
                          "got": [1.0, 1.0]}
    assert r0["high"] == {"member": False, "rank": -1} and r2["low"] == {"member": False, "rank": -1}


@needs_mpi
@pytest.mark.parametrize(("size", "env", "hot"), [(2, {}, True), (3, {}, True),
                                                  (2, {"DISTRIB_MPI_BLOCKING": "0"}, False)])
def test_small_all_reduce_takes_the_blocking_hot_path(tmp_path, size, env, hot):
    run = run_mpi("hot_all_reduce", size, tmp_path, env=env, timeout=60)
    assert run.returncode == 0, run.stderr[-3000:]
    for r in range(size):
        out = run.result(r)
        assert out["wrong"] == []
        assert out["ordered"] is True and out["strided"] is True
        assert out["scalars"] == [[float(sum(range(1, size + 1))), hot]] * 2
        for key, taken in out["paths"].items():
            # the first call of a (dtype, op) checks it on the general path; AVG divides after MPI
            assert taken == ([False, hot, hot] if not key.endswith("AVG") else [False] * 3), key


def test_blocking_switch_refuses_a_bad_value(monkeypatch):
    from distrib.backends import _mpi_setup as mpi_setup

    monkeypatch.setenv("DISTRIB_MPI_BLOCKING", "yes")
    with pytest.raises(ValueError, match="DISTRIB_MPI_BLOCKING must be 0 or 1, got 'yes'"):
        mpi_setup.blocking_enabled()
    monkeypatch.setenv("DISTRIB_MPI_BLOCKING", "0")
    assert mpi_setup.blocking_enabled() is False
    monkeypatch.delenv("DISTRIB_MPI_BLOCKING")
    assert mpi_setup.blocking_enabled() is True


@needs_mpi
def test_object_collectives_span_many_chunks(tmp_path):
    run = run_mpi("big_objects", 2, tmp_path, env={"DISTRIB_MPI_MAX_COUNT": str(1 << 18)}, timeout=60)
    assert run.returncode == 0, run.stderr[-3000:]
    for r in range(2):
        assert run.result(r)["broadcast"] is True
        assert run.result(r)["all_gather"] == [True, True]
    assert run.result(0)["p2p"] == {"src": 1, "ok": True}


@needs_mpi
def test_dtypes_without_an_mpi_datatype_reduce_through_user_ops(tmp_path):
    run = run_mpi("user_defined_ops", 2, tmp_path, timeout=60)
    assert run.returncode == 0, run.stderr[-3000:]
    for r in range(2):
        out = run.result(r)
        assert out["sum"] == [1.0, 3.0, 5.0, 7.0, 9.0, 11.0]
        assert out["max"] == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
        assert out["avg"] == [0.5, 1.5, 2.5, 3.5, 4.5, 5.5]
        # input on rank q is arange(4) * (q + 1): the sum over 2 ranks is arange(4) * 3, block r
        assert out["reduce_scatter"] == [6.0 * r, 6.0 * r + 3.0]
        assert out["used_user_ops"] == ["AVG", "MAX", "SUM"]


@needs_mpi
def test_ranks_not_started_by_one_mpiexec_get_a_clear_error(tmp_path):
    for result in run_without_mpiexec("outside_mpi_job", 2, tmp_path):
        error = result["error"]
        assert error["type"] == "DistBackendError"
        assert "are not all in one MPI job" in error["message"]
        assert "mpiexec -n 2 python script.py" in error["message"]


# ---------------------------------------------------------------- in-process: stand-in mpi modules
def _fake_mpi(**attrs):
    return types.SimpleNamespace(__file__="/nonexistent/libnotmpi.so", **attrs)


@pytest.mark.parametrize(("env", "attrs", "expected"), [
    ({"DISTRIB_MPI_CUDA_AWARE": "1"}, {"Query_cuda_support": lambda: False}, True),
    ({"DISTRIB_MPI_CUDA_AWARE": "0"}, {"Query_cuda_support": lambda: True}, False),
    ({}, {"Query_cuda_support": lambda: True}, True),
    ({}, {"Query_cuda_support": lambda: False}, False),
    ({"OMPI_MCA_opal_cuda_support": "true"}, {}, True),
    ({"MV2_USE_CUDA": "1"}, {}, True),
    ({"MPIR_CVAR_ENABLE_GPU": "1"}, {}, True),
    ({"MPIR_CVAR_ENABLE_GPU": "0"}, {}, False),
    ({}, {}, False),
])
def test_cuda_aware_detection(monkeypatch, env, attrs, expected):
    from distrib.backends._mpi_setup import cuda_aware

    for name in ("DISTRIB_MPI_CUDA_AWARE", "OMPI_MCA_opal_cuda_support", "MV2_USE_CUDA",
                 "MPICH_GPU_SUPPORT_ENABLED", "MPIR_CVAR_ENABLE_GPU"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert cuda_aware(_fake_mpi(**attrs)) is expected


class _FakeWorld:
    def __init__(self, size):
        self.size, self.aborted = size, []

    def Get_size(self):  # noqa: N802 - mpi4py's name
        return self.size

    def Get_rank(self):  # noqa: N802
        return 1

    def Abort(self, code):  # noqa: N802
        self.aborted.append(code)


@pytest.mark.parametrize(("size", "installed"), [(1, False), (2, True)])
def test_abort_hook_prints_the_traceback_then_aborts(monkeypatch, capsys, size, installed):
    from distrib.backends import _mpi_setup as mpi_setup

    monkeypatch.setattr(mpi_setup, "_state", {"hook": False})
    monkeypatch.setattr(sys, "excepthook", sys.__excepthook__)
    exits = []
    monkeypatch.setattr(mpi_setup, "_exit", exits.append)  # abort_job ends the process after Abort
    world = _FakeWorld(size)
    assert mpi_setup.install_abort_hook(_fake_mpi(COMM_WORLD=world)) is installed
    assert (sys.excepthook is not sys.__excepthook__) is installed
    try:
        raise KeyError("lost")
    except KeyError as exc:
        sys.excepthook(type(exc), exc, exc.__traceback__)
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "KeyError: 'lost'" in err
    assert world.aborted == ([1] if installed else [])
    assert exits == ([1] if installed else [])
    if installed:
        assert "uncaught KeyError on MPI rank 1; calling MPI_Abort" in err


@pytest.mark.parametrize(("env", "same_host", "cuda_aware", "expected"), [
    (None, True, False, 256 << 10),  # one host: the ring from 256 KiB
    (None, False, False, float("inf")),  # across hosts: the MPI library's algorithms
    ("0", False, False, 0),  # forced, also across hosts
    ("1048576", True, False, 1 << 20),
    ("0", True, True, float("inf")),  # CUDA arrays stay with CUDA-aware MPI
])
def test_ring_all_reduce_threshold(monkeypatch, env, same_host, cuda_aware, expected):
    from distrib.backends._mpi_setup import ring_threshold  # noqa: PLC0415 - imports no mpi4py

    if env is None:
        monkeypatch.delenv("DISTRIB_MPI_RING_MIN_BYTES", raising=False)
    else:
        monkeypatch.setenv("DISTRIB_MPI_RING_MIN_BYTES", env)
    assert ring_threshold(same_host, cuda_aware) == expected


def test_ring_threshold_refuses_a_bad_value(monkeypatch):
    from distrib.backends._mpi_setup import ring_threshold  # noqa: PLC0415

    monkeypatch.setenv("DISTRIB_MPI_RING_MIN_BYTES", "1MB")
    with pytest.raises(ValueError, match="DISTRIB_MPI_RING_MIN_BYTES must be a non-negative integer, got '1MB'"):
        ring_threshold(True, False)
