"""The ``distrib-launch`` command line: torchrun's flags, their spellings, and clear errors."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from launch.channel import LOST_AFTER
from launch.cli import build_parser, parse_args, parse_nnodes, resolve_nproc
from launch.output import parse_std_spec

from .conftest import ROOT, clean_env, run_launch, write_script

NPROC_CASES = [  # (argv, expected nproc)
    (["--nproc", "3", "s.py"], 3),
    (["--nproc-per-node", "2", "s.py"], 2),
    (["--nproc_per_node", "4", "s.py"], 4),
    (["--nproc", "cpu", "s.py"], "cpu_count"),
    (["--nproc", "auto", "s.py"], "cpu_count"),  # no GPU here: auto means CPUs
    (["s.py"], 1),
]


@pytest.mark.parametrize("argv,expected", NPROC_CASES)
def test_nproc_spellings_and_values(argv, expected, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    import os
    args = parse_args(argv)
    assert args.nproc == (os.cpu_count() if expected == "cpu_count" else expected)


DEFAULTS = [  # (attribute, default) as torchrun's
    ("master_addr", "127.0.0.1"), ("master_port", 29500), ("node_rank", 0), ("max_restarts", 0),
    ("min_nodes", 1), ("max_nodes", 1), ("standalone", False), ("redirects", "0"), ("tee", "0"),
    ("heartbeat_interval", 5.0),  # ours
]


@pytest.mark.parametrize("attribute,default", DEFAULTS)
def test_defaults(attribute, default):
    assert getattr(parse_args(["train.py"]), attribute) == default


def test_underscore_spellings_and_script_args():
    args = parse_args(["--nnodes", "1:3", "--node_rank", "2", "--master_addr", "10.0.0.1", "--master_port", "1234",
                       "--max_restarts", "2", "--monitor_interval", "0.5", "--start_method", "fork",
                       "--log_dir", "/tmp/x", "train.py", "--lr", "0.1", "-m", "x"])
    assert (args.min_nodes, args.max_nodes, args.node_rank, args.master_addr, args.master_port) == \
        (1, 3, 2, "10.0.0.1", 1234)
    assert (args.max_restarts, args.monitor_interval, args.start_method, args.log_dir) == (2, 0.5, "fork", "/tmp/x")
    assert args.command == [sys.executable, "train.py", "--lr", "0.1", "-m", "x"]  # script flags pass through


def test_heartbeat_help_says_when_a_node_is_lost():
    """The help spells out LOST_AFTER (cli.py stays free of the multi-node imports)."""
    help_text = " ".join(build_parser().format_help().split())
    assert f"a node silent for {LOST_AFTER} intervals is lost" in help_text


COMMANDS = [  # (flags, expected argv after the interpreter)
    ([], [sys.executable, "s.py", "a"]),
    (["-m"], [sys.executable, "-m", "s.py", "a"]),
    (["--module"], [sys.executable, "-m", "s.py", "a"]),
    (["--no-python"], ["s.py", "a"]),
    (["--no_python"], ["s.py", "a"]),
]


@pytest.mark.parametrize("flags,expected", COMMANDS)
def test_worker_command(flags, expected):
    assert parse_args([*flags, "s.py", "a"]).command == expected


def test_run_path_uses_runpy():
    command = parse_args(["--run-path", "s.py", "a"]).command
    assert command[:2] == [sys.executable, "-c"] and "runpy.run_path" in command[2] and command[3:] == ["s.py", "a"]


@pytest.mark.parametrize("value,expected", [("2", (2, 2)), ("1:4", (1, 4)), ("3:3", (3, 3))])
def test_parse_nnodes(value, expected):
    assert parse_nnodes(value) == expected


BAD_ARGS = [  # (argv, message in the usage error)
    (["--nproc", "0", "s.py"], r"--nproc: expected a positive int, 'auto', 'cpu' or 'gpu', got '0'"),
    (["--nproc", "many", "s.py"], r"got 'many'"),
    (["--nnodes", "3:2", "s.py"], r"--nnodes: expected N or MIN:MAX with 1 <= MIN <= MAX, got '3:2'"),
    (["--nnodes", "x", "s.py"], r"--nnodes: expected N or MIN:MAX"),
    (["--nnodes", "2", "--node-rank", "2", "s.py"], r"--node-rank 2: expected 0 <= node rank < nnodes \(2\)"),
    (["--max-restarts", "-1", "s.py"], r"--max-restarts: expected >= 0, got -1"),
    (["--heartbeat-interval", "0", "s.py"], r"--heartbeat-interval must be > 0"),
    (["--no-python", "-m", "s.py"], r"--no-python and -m/--module cannot be used together"),
    ([], r"the following arguments are required: script"),
]


@pytest.mark.parametrize("argv,message", BAD_ARGS)
def test_bad_arguments_exit_2_with_a_message(argv, message, capsys):
    with pytest.raises(SystemExit) as exc_info:
        parse_args(argv)
    assert exc_info.value.code == 2
    assert __import__("re").search(message, capsys.readouterr().err)


def test_nproc_gpu_without_a_gpu_names_the_fix(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(ValueError, match=r"--nproc gpu: no CUDA device is visible .*use --nproc cpu"):
        resolve_nproc("gpu")


def test_nproc_counts_visible_devices(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,2,3")
    assert (resolve_nproc("gpu"), resolve_nproc("auto")) == (3, 3)


@pytest.mark.parametrize("value,expected", [("0", {0: 0, 1: 0}), ("3", {0: 3, 1: 3}), ("1:2", {0: 0, 1: 2}),
                                            ("0:1,1:3", {0: 1, 1: 3})])
def test_std_spec(value, expected):
    assert parse_std_spec(value, 2, "--tee") == expected


@pytest.mark.parametrize("value", ["4", "0:x", "a:1"])
def test_bad_std_spec(value):
    with pytest.raises(ValueError, match="--redirects: expected"):
        parse_std_spec(value, 2, "--redirects")


def test_standalone_ignores_nnodes():
    args = parse_args(["--standalone", "--nnodes", "4", "s.py"])
    assert (args.min_nodes, args.max_nodes) == (1, 1)


def test_python_dash_m_launch_and_console_script(tmp_path):
    script = write_script(tmp_path, "hello.py", "import os; print('hello', os.environ['RANK'])\n")
    result = run_launch("--nproc", "1", script)
    assert (result.returncode, result.stdout) == (0, "[rank0]:hello 0\n")
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"distrib-launch": "launch.__main__:main"}
    exe = shutil.which("distrib-launch", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("distrib-launch is not installed next to this interpreter (pip install -e .)")
    result = subprocess.run([exe, script], capture_output=True, text=True, timeout=30, env=clean_env())
    assert (result.returncode, result.stdout) == (0, "[rank0]:hello 0\n")


def test_help_lists_torchrun_flags():
    result = run_launch("--help")
    for flag in ("--nproc", "--nproc-per-node", "--nnodes", "--node-rank", "--master-addr", "--master-port",
                 "--standalone", "--max-restarts", "--monitor-interval", "--start-method", "--log-dir",
                 "--redirects", "--tee", "--module", "--no-python", "--run-path"):
        assert flag in result.stdout, flag
