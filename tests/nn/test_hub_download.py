"""``nn.hub.download_url_to_file`` and ``load_state_dict_from_url`` over ``file://`` URLs
(hash checks, caching, model_dir), and the ``examples/hub_load.py`` example end to end.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import re
import shutil
import subprocess
import sys
import urllib.error
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import tensor
from nn import hub
from nn.hub import _dirs

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.fixture(autouse=True)
def hub_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("DISTRIB_HUB_DIR", str(tmp_path / "hub"))
    monkeypatch.setattr(_dirs, "_hub_dir", None)
    yield tmp_path / "hub"
    shutil.rmtree(tmp_path, ignore_errors=True)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def checkpoint(tmp_path) -> Path:
    """A state dict saved as served/weights-<sha256 prefix>.pt."""
    served = tmp_path / "served"
    served.mkdir()
    path = served / "weights.pt"
    tensor.save({"w": tensor.arange(6, dtype=tensor.float32).reshape(2, 3), "b": tensor.zeros(3)}, path)
    named = served / f"weights-{sha256(path)[:10]}.pt"
    path.rename(named)
    return named


def assert_state(state) -> None:
    assert sorted(state) == ["b", "w"]
    np.testing.assert_array_equal(state["w"].numpy(), np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(state["b"].numpy(), np.zeros(3, dtype=np.float32))


def test_downloads_into_hub_checkpoints_once(checkpoint, hub_dir, capsys):
    assert_state(hub.load_state_dict_from_url(checkpoint.as_uri(), progress=False))
    cached = hub_dir / "checkpoints" / checkpoint.name
    assert cached.read_bytes() == checkpoint.read_bytes()
    assert f'Downloading: "{checkpoint.as_uri()}" to {cached}' in capsys.readouterr().err
    checkpoint.unlink()  # the second call reads the cache and does not download
    assert_state(hub.load_state_dict_from_url(checkpoint.as_uri(), progress=False))
    assert capsys.readouterr().err == ""


def test_model_dir_and_file_name(checkpoint, tmp_path, hub_dir):
    state = hub.load_state_dict_from_url(checkpoint.as_uri(), model_dir=tmp_path / "models",
                                         file_name="renamed.pt", progress=False, map_location="cpu")
    assert_state(state)
    assert os.listdir(tmp_path / "models") == ["renamed.pt"]
    assert not hub_dir.exists()


def test_check_hash_accepts_the_right_prefix(checkpoint, tmp_path):
    state = hub.load_state_dict_from_url(checkpoint.as_uri(), model_dir=tmp_path / "m", check_hash=True,
                                         progress=False)
    assert_state(state)


@pytest.mark.parametrize("check_hash", [True, False])
def test_bad_hash_in_the_name(checkpoint, tmp_path, check_hash):
    wrong = checkpoint.with_name("weights-deadbeef.pt")
    shutil.copy(checkpoint, wrong)
    model_dir = tmp_path / "m"
    if not check_hash:  # the name is not checked unless asked
        assert_state(hub.load_state_dict_from_url(wrong.as_uri(), model_dir=model_dir, progress=False))
        return
    digest = sha256(wrong)
    with pytest.raises(RuntimeError, match=f'invalid hash value for {re.escape(wrong.as_uri())} '
                                           f'\\(expected prefix "deadbeef", got "{digest}"\\)'):
        hub.load_state_dict_from_url(wrong.as_uri(), model_dir=model_dir, check_hash=True, progress=False)
    assert os.listdir(model_dir) == []  # neither the file nor a partial download is left


def test_check_hash_without_a_hash_in_the_name_warns(checkpoint, tmp_path):
    plain = checkpoint.with_name("plain.pt")
    checkpoint.rename(plain)
    with pytest.warns(UserWarning, match="check_hash=True but the file name 'plain.pt' carries no SHA-256"):
        assert_state(hub.load_state_dict_from_url(plain.as_uri(), model_dir=tmp_path / "m", check_hash=True,
                                                  progress=False))


def test_progress_goes_to_stderr(checkpoint, tmp_path, capsys):
    hub.load_state_dict_from_url(checkpoint.as_uri(), model_dir=tmp_path / "m", progress=True)
    captured = capsys.readouterr()
    assert re.search(r"\r100% \d+B/\d+B\n", captured.err)
    assert captured.out == ""


def test_weights_only_refuses_pickled_objects_unless_disabled(tmp_path):
    path = tmp_path / "obj.pt"
    tensor.save({"ratio": Fraction(1, 3)}, path)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed: .*fractions.Fraction"):
        hub.load_state_dict_from_url(path.as_uri(), model_dir=tmp_path / "a", progress=False)
    state = hub.load_state_dict_from_url(path.as_uri(), model_dir=tmp_path / "b", progress=False,
                                         weights_only=False)
    assert state == {"ratio": Fraction(1, 3)}


def test_a_file_that_is_not_a_checkpoint(tmp_path):
    path = tmp_path / "junk.bin"
    path.write_bytes(b"not a checkpoint")
    with pytest.raises(RuntimeError, match="junk.bin: not a distrib checkpoint"):
        hub.load_state_dict_from_url(path.as_uri(), model_dir=tmp_path / "m", progress=False)


def test_url_without_a_file_name(tmp_path):
    with pytest.raises(ValueError, match="cannot derive a file name from the URL 'file:///'"):
        hub.load_state_dict_from_url("file:///", model_dir=tmp_path / "m")


@pytest.mark.parametrize("size", [0, 1, 300_000])  # empty, tiny, several read chunks
def test_download_url_to_file_copies_bytes_and_checks_the_hash(tmp_path, size):
    source = tmp_path / "blob"
    source.write_bytes(np.random.default_rng(size).bytes(size))
    digest = sha256(source)
    hub.download_url_to_file(source.as_uri(), tmp_path / "copy", hash_prefix=digest[:6], progress=False)
    assert (tmp_path / "copy").read_bytes() == source.read_bytes()
    with pytest.raises(RuntimeError, match=f'expected prefix "0000", got "{digest}"'):
        hub.download_url_to_file(source.as_uri(), tmp_path / "bad", hash_prefix="0000", progress=False)
    assert sorted(os.listdir(tmp_path)) == ["blob", "copy"]  # no partial download is left


def test_download_of_a_missing_file_is_an_error(tmp_path):
    with pytest.raises(urllib.error.URLError, match="No such file or directory"):
        hub.download_url_to_file((tmp_path / "absent").as_uri(), tmp_path / "dst", progress=False)
    assert os.listdir(tmp_path) == []


def test_hub_load_example_runs(tmp_path):
    env = dict(os.environ, DISTRIB_HUB_DIR=str(tmp_path / "hub"))
    result = subprocess.run([sys.executable, str(ROOT / "examples" / "hub_load.py")], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert f"entrypoints in {ROOT / 'examples' / 'hub_local'}: ['tiny_mlp']" in result.stdout
    assert "A 2-layer perceptron" in result.stdout
    assert "TinyMLP(in_features=4, hidden=32, out_features=3)" in result.stdout
    assert "logits: shape (512, 3)" in result.stdout
    accuracy = float(re.search(r"^accuracy: (\d+\.\d)%$", result.stdout, re.MULTILINE).group(1))
    assert accuracy > 90
    (cached,) = (tmp_path / "hub" / "checkpoints").iterdir()
    assert re.fullmatch(r"tiny_mlp-[0-9a-f]{8}\.pt", cached.name)
    assert sha256(cached).startswith(cached.name[len("tiny_mlp-"):-len(".pt")])
