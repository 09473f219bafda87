"""tensor.profiler: events of ops, backward nodes and optimizer steps; schedules; the table;
the Chrome trace (checked against the format's schema); memory recording."""

from __future__ import annotations

import os

import pytest

import nn
import tensor
from tensor import _dispatch, _memory_snapshot
from tensor.profiler import ProfilerAction, ProfilerActivity, profile, record_function, schedule
from tests.conftest import CUDA_SKIP_REASON
from tests.trace_schema import complete, inside, load_trace

pytestmark = pytest.mark.timeout(60)


def _train_steps(prof, steps=2):
    model = nn.Linear(4, 3)
    opt = nn.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        with record_function("forward"):
            loss = model(tensor.ones(5, 4)).relu().sum()
        loss.backward()
        opt.step()
        opt.zero_grad()
        prof.step()


def test_the_trace_has_ops_nested_in_annotations_and_backward_nodes_linked_to_them(tmp_path):
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        _train_steps(prof)
    path = prof.export_chrome_trace(str(tmp_path / "trace.json"))
    events = load_trace(path)
    forward = complete(events, "user_annotation", "forward")
    assert len(forward) == 2
    ops = complete(events, "cpu_op")
    assert {"linear", "relu", "sum"} <= {e["name"] for e in ops}
    assert all(any(inside(op, f) for f in forward) for op in ops if op["name"] == "linear")
    linear = next(op for op in ops if op["name"] == "linear")
    assert linear["args"]["Input Dims"] == [[5, 4], [3, 4], [3]]
    backward = complete(events, "backward")
    assert {"LinearBackward0", "ReluBackward0", "SumBackward0"} <= {e["name"] for e in backward}
    # every backward node of the graph is linked by a flow to the op that made it, and runs after it
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    seq = next(e for e in backward if e["name"] == "LinearBackward0")["args"]["Sequence number"]
    assert seq in starts and seq in ends and starts[seq]["ts"] < ends[seq]["ts"]
    assert [e["name"] for e in complete(events, "optimizer")] == ["Optimizer.step#SGD.step"] * 2
    steps = complete(events, "step")
    assert [e["name"] for e in steps] == ["ProfilerStep#0", "ProfilerStep#1"]
    assert steps[0]["ts"] + steps[0]["dur"] <= steps[1]["ts"] + 1e-3
    assert all(any(inside(f, s) for s in steps) for f in forward)


def test_with_stack_gives_each_op_the_callers_frames():
    with profile(with_stack=True) as prof:
        tensor.ones(2).exp()
    (exp,) = [e for e in prof.events if e[0] == "exp"]
    assert any("test_with_stack_gives_each_op_the_callers_frames" in frame for frame in exp[5]["stack"])
    package = os.path.dirname(tensor.__file__)
    assert not any(frame.startswith(package) for frame in exp[5]["stack"])


def test_no_hook_is_left_installed_and_profilers_do_not_nest():
    with profile():
        assert _dispatch.profiler is not None
        with pytest.raises(RuntimeError, match="already recording"):
            profile().start()
    assert _dispatch.profiler is None


def test_an_op_that_raises_is_not_recorded_and_the_next_op_is():
    with profile() as prof:
        with pytest.raises(RuntimeError, match="size of tensor a"):
            tensor.ones(2) + tensor.ones(3)
        tensor.ones(2) * 3
    names = [e[0] for e in prof.events if e[1] == "cpu_op"]
    assert "add" not in names and "mul" in names


def test_schedule_actions_and_a_trace_per_cycle(tmp_path):
    sched = schedule(wait=1, warmup=1, active=2, repeat=2, skip_first=1)
    assert [sched(s) for s in range(10)] == [
        ProfilerAction.NONE,
        ProfilerAction.NONE,
        ProfilerAction.WARMUP,
        ProfilerAction.RECORD,
        ProfilerAction.RECORD_AND_SAVE,
        ProfilerAction.NONE,
        ProfilerAction.WARMUP,
        ProfilerAction.RECORD,
        ProfilerAction.RECORD_AND_SAVE,
        ProfilerAction.NONE,
    ]
    saved = []
    with profile(schedule=schedule(wait=1, warmup=0, active=2), on_trace_ready=saved.append) as prof:
        for _ in range(6):
            tensor.ones(2) * 2
            prof.step()
    assert len(saved) == 2
    steps = [e[0] for e in prof.events if e[1] == "step"]
    assert steps == ["ProfilerStep#4", "ProfilerStep#5"]
    with pytest.raises(ValueError, match="active must be >= 1, got 0"):
        schedule(wait=0, warmup=0, active=0)


def test_tensorboard_trace_handler_writes_a_trace_per_cycle(tmp_path):
    handler = tensor.profiler.tensorboard_trace_handler(str(tmp_path / "tb"), worker_name="w0")
    with profile(schedule=schedule(wait=0, warmup=0, active=1), on_trace_ready=handler) as prof:
        for _ in range(2):
            tensor.ones(2).sum()
            prof.step()
    files = sorted(os.listdir(tmp_path / "tb"))
    assert len(files) == 2 and all(f.startswith("w0.") and f.endswith(".pt.trace.json") for f in files)
    assert complete(load_trace(str(tmp_path / "tb" / files[0])), "cpu_op", "sum")


def test_key_averages_table_sorts_limits_and_groups_by_shape():
    with profile(record_shapes=True) as prof:
        for n in (2, 2, 3):
            tensor.ones(n) * 2
    rows = prof.key_averages()
    mul = next(r for r in rows if r.key == "mul")
    assert mul.count == 3 and mul.cpu_time_total >= mul.self_cpu_time_total > 0
    by_shape = prof.key_averages(group_by_input_shape=True)
    assert sorted(r.count for r in by_shape if r.key == "mul") == [1, 2]
    table = by_shape.table(sort_by="count", row_limit=1)
    lines = [line for line in table.splitlines() if line.startswith("mul")]
    assert len(lines) == 1 and "[[2]" in lines[0] and "Input Shapes" in table
    with pytest.raises(ValueError, match="unknown sort_by 'speed'"):
        rows.table(sort_by="speed")


def test_profile_memory_gives_each_step_its_peak():
    with profile(profile_memory=True) as prof:
        for n in (1000, 10):
            a = tensor.ones(n) * 2  # 8 n bytes (float32 * 2 is a new tensor of 4 n bytes)
            del a
            prof.step()
    rows = {r.key: r for r in prof.key_averages()}
    assert rows["ProfilerStep#0"].peak_memory >= 4000 > rows["ProfilerStep#1"].peak_memory
    assert "Peak Mem" in prof.key_averages().table()


def test_record_function_as_a_decorator_and_free_when_off():
    @record_function("my_fn")
    def f(x):
        return x + 1

    f(tensor.ones(1))  # no profiler: nothing to record, nothing raised
    with profile() as prof:
        f(tensor.ones(1))
    (event,) = [e for e in prof.events if e[0] == "my_fn"]
    add = next(e for e in prof.events if e[0] == "add")
    assert event[3] <= add[3] and add[3] + add[4] <= event[3] + event[4]


def test_memory_history_keeps_live_tensors_with_their_stack():
    assert tensor.cuda.memory._record_memory_history is _memory_snapshot._record_memory_history  # torch's spelling
    tensor.cuda.memory._record_memory_history("all")
    try:
        big = tensor.ones(1000) * 3
        small = tensor.ones(10) * 3
        snap = tensor.memory_snapshot()
        assert snap["allocated"]["cpu"] == 4040
        assert snap["blocks"][0]["size"] == 4000 and snap["blocks"][0]["shape"] == [1000]
        assert any("test_memory_history_keeps_live_tensors" in frame for frame in snap["blocks"][0]["frames"])
        del big
        assert tensor.memory_snapshot()["allocated"]["cpu"] == 40
        del small
    finally:
        _memory_snapshot._record_memory_history(None)
    assert _dispatch.profiler is None


@pytest.mark.gpu
@pytest.mark.skipif(CUDA_SKIP_REASON is not None, reason=f"no CUDA device: {CUDA_SKIP_REASON}")
def test_ops_on_a_gpu_are_recorded_and_the_summary_counts_the_pool():
    x = tensor.ones(256, device="cuda")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        y = (x * 2).sum()
    assert {"mul", "sum"} <= {e[0] for e in prof.events if e[1] == "cpu_op"}
    kernels = [e for e in prof.events if e[1] == "kernel"]
    assert sorted(e[0] for e in kernels) == ["mul", "sum"]
    assert all(e[2] == f"{x.device} stream" and e[4] >= 0 for e in kernels)
    assert kernels[0][3] <= kernels[1][3]  # in launch order on the device's row
    rows = {r.key: r for r in prof.key_averages()}
    assert rows["mul"].count == 1 and "CUDA total" in prof.key_averages().table()
    summary = tensor.cuda.memory_summary()
    assert "allocated" in summary and tensor.cuda.memory_allocated() >= x.nbytes
    pool = tensor.memory_snapshot()["cuda"][x.device.index or 0]
    assert pool["allocated"] >= x.nbytes and pool["reserved"] >= pool["allocated"]
    del y
