"""Argument checking and the single-process API: clear errors, named values, PyTorch's types."""

from __future__ import annotations

import numpy as np
import pytest

import distrib as dist
import tensor
from distrib.reduce_op import check_op


@pytest.fixture
def world1():
    dist.init_process_group("zmq", init_method="tcp://127.0.0.1:0", rank=0, world_size=1, timeout=10)
    yield
    dist.destroy_process_group()


@pytest.mark.parametrize(("op", "dtype", "match"), [
    (dist.ReduceOp.BAND, np.float32, "BAND .*not defined for float32"),
    (dist.ReduceOp.BOR, np.float64, "BOR .*not defined for float64"),
    (dist.ReduceOp.BXOR, np.float16, "BXOR .*not defined for float16"),
    (dist.ReduceOp.AVG, np.bool_, "AVG is not defined for bool"),
])
def test_reduce_op_refused_for_dtype(op, dtype, match):
    with pytest.raises(ValueError, match=match):
        check_op(op, dtype)


@pytest.mark.parametrize("op", ["sum", ["SUM"], None])
def test_reduce_op_must_be_a_reduce_op(op):
    with pytest.raises(TypeError, match="op must be a distrib.ReduceOp"):
        check_op(op, np.float32)


def test_reduce_op_refusal_survives_accepted_pairs():
    """check_op remembers accepted (op, dtype) pairs; a refused pair must stay refused."""
    assert check_op(dist.ReduceOp.BAND, np.dtype(np.int32)) is dist.ReduceOp.BAND
    assert check_op(dist.ReduceOp.BAND, np.dtype(np.int32)) is dist.ReduceOp.BAND
    for _ in range(2):
        with pytest.raises(ValueError, match="BAND .*float32"):
            check_op(dist.ReduceOp.BAND, np.dtype(np.float32))


def test_bitwise_all_reduce_on_float_tensor_names_dtype(world1):
    with pytest.raises(ValueError, match="BOR .*float32"):
        dist.all_reduce(tensor.ones(2), op=dist.ReduceOp.BOR)


def test_error_types_follow_pytorch():
    assert issubclass(dist.DistError, RuntimeError)
    for cls in (dist.DistBackendError, dist.DistNetworkError, dist.DistStoreError):
        assert issubclass(cls, dist.DistError)


def test_collective_before_init_says_how_to_fix():
    assert not dist.is_initialized()
    with pytest.raises(dist.DistError, match="call distrib.init_process_group first"):
        dist.all_reduce(tensor.ones(1))


def test_init_twice_raises(world1):
    with pytest.raises(dist.DistError, match="twice") as info:
        dist.init_process_group("zmq", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
    assert isinstance(info.value, ValueError)  # PyTorch raises ValueError here


@pytest.mark.parametrize("call", [
    dist.get_rank, dist.get_world_size, dist.get_backend, dist.barrier, lambda: dist.new_group([0]),
    lambda: dist.all_reduce(tensor.ones(2)), lambda: dist.broadcast(tensor.ones(2), 0),
])
def test_use_before_init_is_a_value_error_as_in_pytorch(call):
    """PyTorch raises ValueError ("Default process group has not been initialized"); ours is
    also a DistError, so code written either way catches it."""
    with pytest.raises(ValueError, match="not initialized") as info:
        call()
    assert isinstance(info.value, dist.DistError)


def test_queries_on_world_of_one(world1):
    assert (dist.is_initialized(), dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (True, 0, 1, "zmq")
    assert dist.get_process_group_ranks(dist.group.WORLD) == [0]


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda: dist.broadcast(tensor.ones(1), src=3), ValueError, "src=3 is not a member"),
    (lambda: dist.all_gather([tensor.ones(1)] * 2, tensor.ones(1)), ValueError, "one tensor per rank .*got 2"),
    (lambda: dist.all_gather([tensor.ones(2)], tensor.ones(1)), ValueError, r"tensor_list\[0\] has shape \(2,\)"),
    (lambda: dist.all_reduce(np.ones(2)), TypeError, "all_reduce: tensor must be a Tensor, got ndarray"),
    (lambda: dist.all_gather_into_tensor(tensor.ones(3), tensor.ones(2)), ValueError, "world_size"),
    (lambda: dist.send(tensor.ones(1), dst=0), ValueError, "dst must be another rank"),
    (lambda: dist.get_group_rank(dist.group.WORLD, 5), ValueError, "global rank 5 is not part"),
    (lambda: dist.get_global_rank(dist.group.WORLD, 1), ValueError, "group rank 1 is out of range"),
    (lambda: dist.new_group([0, 0]), ValueError, "duplicates"),
    (lambda: dist.new_group([0, 4]), ValueError, r"rank\(s\) \[4\] are not in the world"),
    (lambda: dist.all_to_all_single(tensor.ones(3), tensor.ones(3), input_split_sizes=[2]), ValueError,
     "input_split_sizes"),
    (lambda: dist.all_to_all_single(tensor.ones(3), tensor.ones(2)), ValueError,
     "sends itself 2 elements of input but has room for 3"),
    (lambda: dist.all_to_all_single(tensor.ones(2), tensor.ones(2, dtype=tensor.int64)), ValueError,
     "output is float32 but input is int64"),
])
def test_bad_arguments(world1, call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_world_of_one_collectives_are_identity(world1):
    t = tensor.arange(4, dtype=tensor.float32)
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    out = tensor.zeros(4)
    dist.all_gather_into_tensor(out, t)
    np.testing.assert_array_equal(out.numpy(), np.arange(4, dtype=np.float32))


@pytest.mark.parametrize(("env", "missing"), [
    ({"RANK": "0", "WORLD_SIZE": "1", "MASTER_PORT": "1"}, "MASTER_ADDR"),
    ({"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1"}, "MASTER_PORT"),
    ({"WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"}, "RANK"),
    ({"RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"}, "WORLD_SIZE"),
])
def test_env_init_names_missing_variable(monkeypatch, env, missing):
    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                 "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "PMIX_RANK",
                 "SLURM_JOB_NODELIST", "SLURM_NODELIST"):
        monkeypatch.delenv(name, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(ValueError, match=f"environment variable {missing} expected"):
        dist.init_process_group("zmq", init_method="env://")
    assert not dist.is_initialized()


@pytest.mark.parametrize(("env", "rank_size"), [
    ({"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "4"}, (2, 4)),
    ({"PMI_RANK": "1", "PMI_SIZE": "3"}, (1, 3)),
    ({"SLURM_PROCID": "0", "SLURM_NTASKS": "2"}, (0, 2)),
])
def test_rank_and_size_from_mpi_and_slurm(monkeypatch, env, rank_size):
    from distrib.rendezvous import env_rank_and_size

    for name in ("RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert env_rank_and_size() == rank_size


def test_file_init_method(tmp_path):
    dist.init_process_group("zmq", init_method=f"file://{tmp_path}/rdv", rank=0, world_size=1, timeout=10)
    try:
        t = tensor.ones(2)
        dist.all_reduce(t)
        assert dist.get_world_size() == 1
    finally:
        dist.destroy_process_group()
    assert not (tmp_path / "rdv").exists(), "the FileStore's file outlived the job"


def test_async_op_returns_completed_work_with_future(world1):
    t = tensor.ones(3)
    work = dist.all_reduce(t, async_op=True)
    assert work.wait(timeout=10) is True
    assert work.is_completed() and work.exception() is None
    assert work.get_future().value() == [t]


def test_avg_of_bfloat16_divides_as_floats():
    import ml_dtypes

    from distrib.reduce_op import finish

    out = np.array([3.0, 5.0, -5.0], dtype=ml_dtypes.bfloat16)
    finish(dist.ReduceOp.AVG, out, 2)
    assert out.astype(np.float32).tolist() == [1.5, 2.5, -2.5]


def test_product_on_complex_is_refused_as_in_pytorch():
    with pytest.raises(ValueError, match="PRODUCT is not defined for complex"):
        check_op(dist.ReduceOp.PRODUCT, np.dtype(np.complex64))


@pytest.mark.parametrize("call", [
    lambda: dist.all_reduce(tensor.ones(2), op=dist.ReduceOp.BAND),
    lambda: dist.all_reduce(tensor.ones(2).to(tensor.bfloat16), op=dist.ReduceOp.BXOR),
    lambda: dist.all_reduce(tensor.ones(2, dtype=tensor.bool), op=dist.ReduceOp.AVG),
    lambda: dist.broadcast(tensor.ones(2), src=2),
    lambda: dist.reduce(tensor.ones(2), dst=5),
    lambda: dist.broadcast(tensor.ones(2), group_src=1),
    lambda: dist.all_gather([tensor.zeros(2)] * 2, tensor.ones(2)),
    lambda: dist.all_gather_into_tensor(tensor.zeros(5), tensor.ones(2)),
    lambda: dist.reduce_scatter(tensor.zeros(2), [tensor.ones(3)]),
    lambda: dist.reduce_scatter_tensor(tensor.zeros(2), tensor.ones(3)),
    lambda: dist.all_to_all([tensor.zeros(1)], [tensor.ones(1)] * 2),
    lambda: dist.all_to_all_single(tensor.ones(3), tensor.ones(3), input_split_sizes=[2]),
    lambda: dist.gather(tensor.ones(1), [tensor.zeros(1)] * 2, dst=0),
])
def test_unusable_collective_arguments_are_runtime_errors_as_in_pytorch(world1, call):
    with pytest.raises(RuntimeError) as info:
        call()
    assert isinstance(info.value, ValueError)  # and still what they were before


@pytest.mark.parametrize("call", [
    lambda: dist.all_reduce(tensor.ones(2), group=5),
    lambda: dist.get_rank(group=5),
    lambda: dist.get_world_size(group="x"),
])
def test_a_group_that_is_not_one_is_a_value_error(world1, call):
    with pytest.raises(ValueError, match="group"):
        call()


@pytest.mark.parametrize("tensor_list", [None, [tensor.zeros(1)]])
def test_all_gather_of_non_tensors_is_a_type_error(world1, tensor_list):
    with pytest.raises(TypeError):
        dist.all_gather(tensor_list, 1.0 if tensor_list else tensor.ones(1))


def test_all_reduce_writes_through_an_expanded_tensor(world1, torch):
    ours, theirs = tensor.tensor([2.0]).expand(3), torch.tensor([2.0]).expand(3)
    dist.all_reduce(ours, op=dist.ReduceOp.AVG)
    assert ours.tolist() == theirs.tolist()


def test_a_destroyed_subgroup_refuses_ops_and_queries(world1):
    group = dist.new_group([0])
    dist.destroy_process_group(group)
    with pytest.raises(dist.DistError, match="destroyed"):
        dist.all_reduce(tensor.ones(1), group=group)
    with pytest.raises(ValueError, match="destroyed"):
        dist.get_rank(group)


def test_unknown_init_method_scheme_is_a_runtime_error():
    with pytest.raises(RuntimeError, match="no rendezvous handler"):
        dist.init_process_group("gloo", init_method="foo://x", rank=0, world_size=1)


@pytest.mark.parametrize("name", ["gloo", "cpu:gloo", "GLOO"])
def test_gloo_names_the_groups_it_makes(name):
    dist.init_process_group(name, init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
    try:
        group = dist.new_group([0], backend=dist.Backend.GLOO)
        assert (dist.get_backend(), dist.get_backend(group)) == (name.lower(), "gloo")
        t = tensor.ones(2)
        dist.all_reduce(t, group=group)
        assert t.tolist() == [1.0, 1.0]
    finally:
        dist.destroy_process_group()
