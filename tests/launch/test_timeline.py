"""distrib-launch --timeline: every rank's trace merged into one file, one row per rank, on one
clock; ops, backward nodes, collectives with bytes, DDP buckets and DataLoader fetches in it."""

from __future__ import annotations

import json

import pytest

from launch import _timeline
from tests.launch.conftest import clean_env, run_launch, write_script
from tests.trace_schema import complete, load_trace

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]  # a 2-rank job: about 6 s

TRAIN = """
    import distrib as dist
    import nn
    import tensor
    from distrib.data import DataLoader, TensorDataset
    from distrib.parallel import DistributedDataParallel as DDP

    dist.init_process_group("zmq")
    model = DDP(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)))
    opt = nn.optim.SGD(model.parameters(), lr=0.1)
    data = DataLoader(TensorDataset(tensor.ones(8, 4)), batch_size=4, num_workers=1)
    for (x,) in data:
        model(x).sum().backward()
        opt.step()
        opt.zero_grad()
    dist.all_reduce(tensor.ones(256))
    dist.barrier()
    dist.destroy_process_group()
"""


@pytest.fixture(scope="module")
def timeline(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("timeline")
    script = write_script(tmp, "train.py", TRAIN)
    out = tmp / "timeline.json"
    proc = run_launch("--nproc", 2, "--timeline", out, script, env=clean_env(), timeout=90)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert f"timeline of ranks [0, 1] written to {out}" in proc.stdout + proc.stderr
    # the parts are merged away; each rank's table stays
    assert sorted(p.name for p in tmp.iterdir()) == [
        "timeline.json",
        "timeline.json.rank0.txt",
        "timeline.json.rank1.txt",
        "train.py",
    ]
    table = (tmp / "timeline.json.rank1.txt").read_text()
    assert "Self CPU %" in table and "all_reduce" in table
    return load_trace(str(out))


def test_one_process_row_per_rank(timeline):
    names = {e["pid"]: e["args"]["name"] for e in timeline if e["ph"] == "M" and e["name"] == "process_name"}
    assert names == {0: "rank 0 of 2", 1: "rank 1 of 2"}
    assert {e["pid"] for e in timeline} == {0, 1}


def test_a_barrier_overlaps_across_ranks_within_5_ms(timeline):
    barriers = {e["pid"]: e for e in complete(timeline, "collective", "barrier")}
    assert set(barriers) == {0, 1}
    (s0, e0), (s1, e1) = [(b["ts"], b["ts"] + b["dur"]) for b in (barriers[0], barriers[1])]
    gap_us = max(s0, s1) - min(e0, e1)  # negative when they overlap
    assert gap_us <= 5000, f"the ranks' barriers are {gap_us} µs apart"


def test_collectives_buckets_backward_and_dataloader_events_on_every_rank(timeline):
    for rank in (0, 1):
        mine = [e for e in timeline if e["pid"] == rank]
        sizes = {e["args"]["bytes"] for e in complete(mine, "collective", "all_reduce")}
        assert 1024 in sizes  # the 256 float32 all_reduce
        assert all(e["args"]["group"] == "default_pg" for e in complete(mine, "collective"))
        buckets = complete(mine, "ddp")
        assert len(buckets) == 2 and all(e["args"]["bytes"] == (4 * 8 + 8 + 8 + 1) * 4 for e in buckets)
        assert {"AddmmBackward0", "LinearBackward0"} & {e["name"] for e in complete(mine, "backward")}
        fetches = complete(mine, "dataloader")
        main = [e for e in fetches if e["name"].startswith("enumerate(DataLoader)")]
        workers = [e for e in fetches if e["name"] == "DataLoader worker fetch"]
        assert len(main) >= 2 and len(workers) == 2
        assert {e["args"]["worker_id"] for e in workers} == {0}
        # a worker's fetch ends before the main side of the iteration returns it
        assert min(e["ts"] + e["dur"] for e in workers) <= max(e["ts"] + e["dur"] for e in main)


def test_merge_keeps_flow_ids_apart():
    part = {
        "traceEvents": [
            {"ph": "s", "id": 7, "pid": 0, "tid": 1, "ts": 1.0, "cat": "fwdbwd", "name": "f"},
            {"ph": "f", "id": 7, "pid": 0, "tid": 1, "ts": 2.0, "cat": "fwdbwd", "name": "f"},
        ]
    }
    merged = _timeline.merge({0: json.loads(json.dumps(part)), 1: part})
    ids = {(e["pid"], e["id"]) for e in merged["traceEvents"] if e["ph"] == "s"}
    assert len({i for _, i in ids}) == 2
