"""distrib.utils.tensorboard.SummaryWriter: event files TensorBoard's own reader reads back."""

from __future__ import annotations

import numpy as np
import pytest

import tensor

pytestmark = pytest.mark.timeout(60)
pytest.importorskip("tensorboardX", reason="SummaryWriter needs tensorboardX: pip install 'distrib[tensorboard]'")
event_accumulator = pytest.importorskip(
    "tensorboard.backend.event_processing.event_accumulator",
    reason="reading event files back needs tensorboard (the test extra): pip install tensorboard",
)

from distrib.utils.tensorboard import SummaryWriter  # noqa: E402 - after the skips


def _read(log_dir):
    acc = event_accumulator.EventAccumulator(
        str(log_dir), size_guidance={"scalars": 0, "histograms": 0, "images": 0, "tensors": 0}
    )
    acc.Reload()
    return acc


def test_scalars_histograms_images_and_text_read_back(tmp_path, monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    with SummaryWriter(str(tmp_path)) as writer:
        for step in range(3):
            writer.add_scalar("loss/train", tensor.tensor(1.0 / (step + 1)), step)
            writer.add_scalar("lr", 0.1, step)
        writer.add_histogram("weights", tensor.arange(100.0), 0)
        writer.add_image("sample", np.ones((3, 4, 5), dtype=np.float32) * 0.5, 0)
        writer.add_text("note", "hello **tensorboard**", 0)
        writer.add_scalars("acc", {"train": 0.9, "val": tensor.tensor(0.8)}, 0)
    acc = _read(tmp_path)
    assert [(e.step, round(e.value, 6)) for e in acc.Scalars("loss/train")] == [(0, 1.0), (1, 0.5), (2, 0.333333)]
    assert [e.value for e in acc.Scalars("lr")] == pytest.approx([0.1] * 3)
    (hist,) = acc.Histograms("weights")
    assert hist.histogram_value.num == 100 and hist.histogram_value.max == 99
    (image,) = acc.Images("sample")
    assert (image.width, image.height) == (5, 4)
    assert "hello" in acc.Tensors("note/text_summary")[0].tensor_proto.string_val[0].decode()
    # one run directory per curve, as torch.utils.tensorboard
    assert [e.value for e in _read(tmp_path / "acc" / "val").Scalars("acc")] == pytest.approx([0.8])


def test_only_rank_0_writes_by_default(tmp_path, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    writer = SummaryWriter(str(tmp_path / "quiet"))
    writer.add_scalar("loss", 1.0, 0)
    writer.close()
    assert writer.log_dir is None and not (tmp_path / "quiet").exists()
    loud = SummaryWriter(str(tmp_path / "all"), all_ranks=True)
    loud.add_scalar("loss", 2.0, 0)
    loud.close()
    assert [e.value for e in _read(tmp_path / "all" / "rank1").Scalars("loss")] == [2.0]
