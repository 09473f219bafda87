"""The command line of ``distrib-launch``: torchrun's flags, parsed into one launch spec.

Every flag takes torchrun's spelling with dashes and with underscores (``--nproc-per-node``
and ``--nproc_per_node``); ``--nproc`` is the short form.
"""

from __future__ import annotations

import argparse
import os
import sys

__all__ = ["build_parser", "parse_args", "resolve_nproc", "parse_nnodes", "worker_command"]


def _flag(parser, *names, **kwargs) -> None:
    """Add a flag under each name and its underscore spelling (``--node-rank``, ``--node_rank``)."""
    spellings = []
    for name in names:
        spellings.append(name)
        if name.startswith("--") and "-" in name[2:]:
            spellings.append("--" + name[2:].replace("-", "_"))
    parser.add_argument(*spellings, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``distrib-launch`` (torchrun's flags, and ours)."""
    parser = argparse.ArgumentParser(
        prog="distrib-launch",
        description="Start and supervise the worker processes of a distributed job (our torchrun).",
        epilog="Example: distrib-launch --nproc 2 train.py --epochs 3")
    _flag(parser, "--nproc", "--nproc-per-node", dest="nproc", default="1",
          help="workers on this node: an int, 'auto' (GPUs if any, else CPUs), 'cpu' or 'gpu' (default 1)")
    _flag(parser, "--nnodes", default="1", help="number of nodes, N or MIN:MAX (default 1)")
    _flag(parser, "--node-rank", type=int, default=0, help="this node's rank, 0..nnodes-1 (default 0)")
    _flag(parser, "--master-addr", default="127.0.0.1",
          help="address of the node-rank-0 host; workers get it as MASTER_ADDR (default 127.0.0.1)")
    _flag(parser, "--master-port", type=int, default=29500,
          help="workers' MASTER_PORT; with --nnodes > 1 the launchers meet on MASTER_PORT+1 (default 29500)")
    _flag(parser, "--standalone", action="store_true",
          help="single-node job on 127.0.0.1 with a free port (ignores --master-addr/--master-port/--nnodes)")
    _flag(parser, "--max-restarts", type=int, default=0,
          help="how many times the whole worker group restarts after a failure (default 0)")
    _flag(parser, "--monitor-interval", type=float, default=0.1,
          help="seconds between worker health checks (exits are also noticed at once via SIGCHLD)")
    _flag(parser, "--start-method", default="spawn", choices=("spawn", "fork", "forkserver"),
          help="accepted for torchrun compatibility: scripts always start as fresh interpreters")
    _flag(parser, "--log-dir", default=None,
          help="directory for per-attempt worker logs and error files (default: a temporary directory)")
    _flag(parser, "--redirects", "-r", default="0",
          help="send worker std streams to log files only: 0 none, 1 stdout, 2 stderr, 3 both, "
               "or per local rank like 0:1,1:3")
    _flag(parser, "--tee", "-t", default="0", help="like --redirects, but also keep them on the console")
    _flag(parser, "--kill-timeout", type=float, default=30.0,
          help="seconds between SIGTERM and SIGKILL when stopping workers (default 30)")
    _flag(parser, "--rdzv-timeout", type=float, default=600.0,
          help="seconds to wait for all nodes to join the rendezvous (default 600)")
    _flag(parser, "--heartbeat-interval", type=float, default=5.0,
          help="seconds between the heartbeats of the launchers of a multi-node job; a node silent for 3 "
               "intervals is lost, which ends the round (default 5)")
    _flag(parser, "--rdzv-id", "--run-id", dest="run_id", default=None,
          help="the job's run id (DISTRIB_RUN_ID); default: random, agreed on by all nodes")
    _flag(parser, "--timeline", default=os.environ.get("DISTRIB_TIMELINE") or None,
          help="profile every worker and merge their traces into this Chrome trace file, one row per rank "
               "(default: $DISTRIB_TIMELINE); open it in ui.perfetto.dev or chrome://tracing")
    _flag(parser, "--module", "-m", action="store_true", help="run the script as a module, like python -m")
    _flag(parser, "--no-python", action="store_true", help="run the script as an executable, not with python")
    _flag(parser, "--run-path", action="store_true",
          help="run the script with runpy.run_path (no script directory on sys.path)")
    parser.add_argument("script", help="the training script (or module with -m, or executable with --no-python)")
    parser.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments for the script")
    return parser


def parse_nnodes(value: str) -> tuple[int, int]:
    """``"2"`` -> (2, 2); ``"1:4"`` -> (1, 4)."""
    try:
        parts = [int(p) for p in value.split(":")]
    except ValueError:
        parts = []
    if len(parts) == 1:
        parts *= 2
    if len(parts) != 2 or not 1 <= parts[0] <= parts[1]:
        raise ValueError(f"--nnodes: expected N or MIN:MAX with 1 <= MIN <= MAX, got {value!r}")
    return parts[0], parts[1]


def _gpu_count() -> int:
    """GPUs visible to workers, without importing a CUDA library (the launcher stays light)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        ids = [v for v in visible.split(",") if v.strip()]
        return 0 if ids[:1] == ["-1"] else len(ids)
    try:
        return len(os.listdir("/proc/driver/nvidia/gpus"))
    except OSError:
        return 0


def resolve_nproc(value: str) -> int:
    """``--nproc``: an int, ``auto`` (GPUs if any, else CPUs), ``cpu`` or ``gpu``."""
    if value == "cpu" or (value == "auto" and _gpu_count() == 0):
        return os.cpu_count() or 1
    if value in ("gpu", "auto"):
        count = _gpu_count()
        if count == 0:
            raise ValueError("--nproc gpu: no CUDA device is visible (check nvidia-smi and CUDA_VISIBLE_DEVICES); "
                             "use --nproc cpu or a number")
        return count
    try:
        nproc = int(value)
    except ValueError:
        nproc = 0
    if nproc < 1:
        raise ValueError(f"--nproc: expected a positive int, 'auto', 'cpu' or 'gpu', got {value!r}")
    return nproc


def worker_command(args) -> list[str]:
    """The argv each worker runs."""
    if args.no_python:
        if args.module:
            raise ValueError("--no-python and -m/--module cannot be used together")
        return [args.script, *args.script_args]
    if args.module:
        return [sys.executable, "-m", args.script, *args.script_args]
    if args.run_path:
        code = ("import runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')")
        return [sys.executable, "-c", code, args.script, *args.script_args]
    return [sys.executable, args.script, *args.script_args]


def parse_args(argv=None) -> argparse.Namespace:
    """Parse and check the command line; errors exit with status 2 and a usage message."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        args.nproc = resolve_nproc(args.nproc)
        args.min_nodes, args.max_nodes = (1, 1) if args.standalone else parse_nnodes(args.nnodes)
        if not 0 <= args.node_rank < args.max_nodes:
            raise ValueError(f"--node-rank {args.node_rank}: expected 0 <= node rank < nnodes ({args.max_nodes})")
        if args.max_restarts < 0:
            raise ValueError(f"--max-restarts: expected >= 0, got {args.max_restarts}")
        if not 0 <= args.master_port <= 65535 - (args.max_nodes > 1):
            raise ValueError(f"--master-port: expected a TCP port, got {args.master_port}")
        if min(args.monitor_interval, args.rdzv_timeout, args.heartbeat_interval) <= 0 or args.kill_timeout < 0:
            raise ValueError("--monitor-interval, --rdzv-timeout and --heartbeat-interval must be > 0, "
                             "--kill-timeout >= 0")
        args.command = worker_command(args)
    except ValueError as exc:
        parser.error(str(exc))
    return args
