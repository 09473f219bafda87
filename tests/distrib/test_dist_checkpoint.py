"""distrib.checkpoint: a sharded FSDP + Adam (or DDP + ZeRO-1) checkpoint saved on 3 ranks resumes
on 2 (and the reverse) with the parameters of an uninterrupted run; one process: atomic commit (a failed save
leaves the previous checkpoint), async_save's snapshot, resharding of ranges, errors."""

from __future__ import annotations

import os

import numpy as np
import pytest

import tensor
from distrib import checkpoint as dcp
from tests.distrib._harness import case_results
from tests.distrib._sharding_harness import TIGHT, run_config


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["fsdp", "zero"])
@pytest.mark.parametrize("saved_on, loaded_on", [(3, 2), (2, 3)])
def test_resharded_resume_matches_an_uninterrupted_run(tmp_path, kind, saved_on, loaded_on):
    env = {"DCP_DIR": str(tmp_path / "ckpt"), "DCP_KIND": kind}
    saved = run_config("dcp_save", "zmq-shm", saved_on, env)
    assert all(r["saved"] for r in case_results(saved, "dcp_save"))
    resumed = case_results(run_config("dcp_resume", "zmq-shm", loaded_on, env), "dcp_resume")
    for rank, r in enumerate(resumed):
        assert r["max_diff"] < TIGHT, f"rank {rank}: the resumed run differs by {r['max_diff']}"
        assert r["lr"] == 0.02  # the saved option, not the new optimizer's


def _values(t) -> list:
    return np.asarray(t.detach().numpy()).tolist()


def test_save_load_values_tensors_and_shards_in_place(tmp_path):
    whole = tensor.arange(10, dtype=tensor.float64)
    state = {"w": whole.clone(), "meta": {"epoch": 3, "name": "run"}, "s": dcp.ShardedTensor(whole.clone(), (10,), 0)}
    dcp.save(state, checkpoint_id=tmp_path)
    # Load the 10 elements as two pieces of 6 (the second padded), as on 2 ranks.
    first, second = tensor.zeros(6, dtype=tensor.float64), tensor.zeros(6, dtype=tensor.float64)
    target = {
        "w": tensor.zeros(10, dtype=tensor.float64),
        "meta": {"epoch": 0, "name": ""},
        "s": dcp.ShardedTensor(first, (10,), 0),
    }
    dcp.load(target, checkpoint_id=tmp_path)
    dcp.load({"s": dcp.ShardedTensor(second, (10,), 6)}, checkpoint_id=tmp_path)
    assert _values(target["w"]) == list(range(10)) and target["meta"] == {"epoch": 3, "name": "run"}
    assert _values(first) == [0, 1, 2, 3, 4, 5] and _values(second) == [6, 7, 8, 9, 0, 0]


def test_a_failed_save_leaves_the_previous_checkpoint(tmp_path, monkeypatch):
    dcp.save({"w": tensor.ones(3)}, checkpoint_id=tmp_path)
    real_save = tensor.save

    def crash(obj, path, *args, **kwargs):
        if str(path).endswith(".distcp"):
            raise OSError("disk full")
        return real_save(obj, path, *args, **kwargs)

    monkeypatch.setattr(tensor, "save", crash)
    with pytest.raises(OSError, match="disk full"):
        dcp.save({"w": tensor.zeros(3)}, checkpoint_id=tmp_path)
    monkeypatch.undo()
    target = {"w": tensor.zeros(3)}
    dcp.load(target, checkpoint_id=tmp_path)
    assert _values(target["w"]) == [1.0, 1.0, 1.0]
    dcp.save({"w": tensor.full((3,), 2.0)}, checkpoint_id=tmp_path)  # a later save removes the debris
    dcp.load(target, checkpoint_id=tmp_path)
    assert _values(target["w"]) == [2.0, 2.0, 2.0]
    assert len([n for n in os.listdir(tmp_path) if n.startswith("v")]) == 1


def test_async_save_snapshots_the_tensors(tmp_path):
    w = tensor.ones(4)
    future = dcp.async_save({"w": w}, checkpoint_id=tmp_path)
    w.fill_(7.0)  # training goes on
    future.result(timeout=60)
    target = {"w": tensor.zeros(4)}
    dcp.load(target, checkpoint_id=tmp_path)
    assert _values(target["w"]) == [1.0] * 4


def test_load_errors_name_the_key(tmp_path):
    dcp.save({"w": tensor.ones(3)}, checkpoint_id=tmp_path)
    with pytest.raises(KeyError, match="'v'"):
        dcp.load({"v": tensor.ones(3)}, checkpoint_id=tmp_path)
    with pytest.raises(RuntimeError, match="shape \\[2\\] here and \\[3\\]"):
        dcp.load({"w": tensor.ones(2)}, checkpoint_id=tmp_path)
    with pytest.raises(FileNotFoundError):
        dcp.load({"w": tensor.ones(3)}, checkpoint_id=tmp_path / "missing")
