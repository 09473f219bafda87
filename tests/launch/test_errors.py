"""Error files: ``launch.errors.record`` writes them, the launcher reads ours and torch's format."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from launch.errors import Failure, format_summary, read_error_file, record, write_error_file


def test_record_writes_the_traceback_and_reraises(tmp_path, monkeypatch):
    path = tmp_path / "error.json"
    monkeypatch.setenv("DISTRIB_ERROR_FILE", str(path))

    @record
    def main():
        raise ValueError("bad shard 3")

    with pytest.raises(ValueError, match="bad shard 3"):
        main()
    data = json.loads(path.read_text())
    assert data["message"] == "ValueError: bad shard 3"
    assert 'raise ValueError("bad shard 3")' in data["traceback"]
    assert read_error_file(str(path))["message"] == "ValueError: bad shard 3"


def test_record_lets_sys_exit_through_without_an_error_file(tmp_path, monkeypatch):
    path = tmp_path / "error.json"
    monkeypatch.setenv("DISTRIB_ERROR_FILE", str(path))
    with pytest.raises(SystemExit):
        record(lambda: sys.exit(0))()
    assert not path.exists()


def test_without_a_path_nothing_is_written(monkeypatch):
    monkeypatch.delenv("DISTRIB_ERROR_FILE", raising=False)
    assert write_error_file(RuntimeError("x")) is None


def test_install_writes_uncaught_exceptions(tmp_path):
    path = tmp_path / "error.json"
    code = "import launch.errors as e; e.install(); raise OSError('disk gone')"
    result = subprocess.run([sys.executable, "-c", code], env={"DISTRIB_ERROR_FILE": str(path), "PATH": "/usr/bin"},
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 1 and "OSError: disk gone" in result.stderr
    assert json.loads(path.read_text())["message"] == "OSError: disk gone"


def test_reads_torch_elastic_error_files(tmp_path):
    path = tmp_path / "error.json"
    path.write_text(json.dumps({"message": {"message": "RuntimeError: nccl", "extraInfo": {
        "py_callstack": "Traceback...\nRuntimeError: nccl", "timestamp": "1700000000"}}}))
    assert read_error_file(str(path)) == {"message": "RuntimeError: nccl",
                                          "traceback": "Traceback...\nRuntimeError: nccl", "timestamp": 1.7e9}


@pytest.mark.parametrize("content", ["", "{not json", "[1, 2]"])
def test_unreadable_error_files_are_ignored(tmp_path, content):
    path = tmp_path / "error.json"
    path.write_text(content)
    assert read_error_file(str(path)) is None


def test_summary_puts_the_earliest_failure_first():
    late = Failure(time=20.0, host="h", rank=0, local_rank=0, returncode=-9, pid=10, traceback="")
    early = Failure(time=10.0, host="h", rank=3, local_rank=1, returncode=2, pid=11, traceback="tb line")
    text = format_summary("train.py", [late, early])
    assert text.index("rank       : 3") < text.index("Other Failures") < text.index("rank       : 0")
    assert "exitcode   : signal 9 (SIGKILL), exit code 137 (pid: 10)" in text
    assert (early.exit_code, late.exit_code) == (2, 137)
