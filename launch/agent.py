"""The agent: start the local worker group, watch it, stop it, restart it, report failures.

One launcher per node. :class:`Job` starts ``nproc`` workers with the job's environment and
waits for them: a worker exit wakes it at once (SIGCHLD through the signal wakeup fd), so
``--monitor-interval`` only bounds the wait. On the first failure every local worker tree
gets SIGTERM, then SIGKILL after ``--kill-timeout`` (see Note [Process trees] in procs.py).
The whole group restarts while restarts remain (``DISTRIB_RESTART_COUNT`` counts them);
otherwise the failure summary is printed, root cause first, and the launcher exits with the
root cause's exit code (128+signal for a signal), never 0. :func:`run_single` is that loop
for one node; with ``--nnodes`` > 1 the agents agree on ranks, stops and restarts through
the coordinator instead (``launch/node.py``).
"""

from __future__ import annotations

import enum
import os
import secrets
import select
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

from . import procs
from .errors import Failure, format_summary, root_cause
from .output import Console, StreamReader, parse_std_spec

__all__ = ["Job", "WorkerGroup", "Worker", "Signals", "Ending", "Outcome", "run_single"]

FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_KILL_GRACE = 5.0  # seconds to wait for SIGKILLed processes to be gone (the kernel is quick)
_READER_GRACE = 2.0


class Worker:
    def __init__(self, local_rank: int, rank: int, error_file: str) -> None:
        self.local_rank, self.rank, self.error_file = local_rank, rank, error_file
        self.proc: subprocess.Popen | None = None
        self.pid = -1
        self.returncode: int | None = None
        self.end_time: float | None = None
        self.readers: list[StreamReader] = []

    def stderr_tail(self) -> str:
        """The last lines the worker wrote to stderr (for the failure summary)."""
        return "".join(r.tail_text() for r in self.readers if r.target == 2)


class WorkerGroup:
    """The ``nproc`` workers of this node for one attempt."""

    def __init__(self, args, assignment: dict, env_base: dict, attempt_dir: str, console: Console,
                 watchdog: procs.Watchdog | None = None) -> None:
        self.args, self.assignment, self.env_base, self.console = args, assignment, env_base, console
        self.watchdog = watchdog
        self.attempt_dir = attempt_dir
        offset = assignment["rank_offset"]
        self.workers = [Worker(i, offset + i, os.path.join(attempt_dir, str(i), "error.json"))
                        for i in range(args.nproc)]
        self.redirects = parse_std_spec(args.redirects, args.nproc, "--redirects")
        self.tee = parse_std_spec(args.tee, args.nproc, "--tee")

    def environment(self, worker: Worker) -> dict:
        """The environment of ``worker``: the job's, plus torchrun's variables and ours."""
        a, args = self.assignment, self.args
        env = dict(self.env_base)
        env.update({
            "RANK": str(worker.rank), "LOCAL_RANK": str(worker.local_rank),
            "WORLD_SIZE": str(a["world_size"]), "LOCAL_WORLD_SIZE": str(args.nproc),
            "GROUP_RANK": str(a["group_rank"]), "GROUP_WORLD_SIZE": str(a["group_world_size"]),
            "ROLE_RANK": str(worker.rank), "ROLE_WORLD_SIZE": str(a["world_size"]), "ROLE_NAME": "default",
            "MASTER_ADDR": args.master_addr, "MASTER_PORT": str(args.master_port),
            "DISTRIB_RESTART_COUNT": str(a["restart_count"]), "DISTRIB_MAX_RESTARTS": str(args.max_restarts),
            "DISTRIB_RUN_ID": a["run_id"], "DISTRIB_ERROR_FILE": worker.error_file,
            "DISTRIB_AUTH_KEY": a["auth_key"],
            # torchrun's names, so scripts written for torchrun (and torch's @record) work unchanged
            "TORCHELASTIC_RESTART_COUNT": str(a["restart_count"]),
            "TORCHELASTIC_MAX_RESTARTS": str(args.max_restarts), "TORCHELASTIC_RUN_ID": a["run_id"],
            "TORCHELASTIC_ERROR_FILE": worker.error_file,
        })
        if a["group_world_size"] > 1 and not self.env_base.get("DISTRIB_HOST_ID"):
            # Each node is a host of its own (the zmq backend's hierarchical all_reduce and
            # HYBRID_SHARD follow host ids), even where nodes share a machine's boot id
            # (network namespaces, containers); a DISTRIB_HOST_ID the user set is kept.
            env["DISTRIB_HOST_ID"] = f"{a['run_id']}/node{a['group_rank']}"
        return env

    def start(self) -> None:
        """Start every worker (own session, parent-death signal) and its output readers."""
        parent = os.getpid()
        for worker in self.workers:
            os.makedirs(os.path.dirname(worker.error_file), exist_ok=True)
            if os.path.exists(worker.error_file):
                os.unlink(worker.error_file)
            worker.proc = subprocess.Popen(
                self.args.command, env=self.environment(worker), stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                preexec_fn=procs.child_setup(parent), close_fds=True)
            worker.pid = worker.proc.pid
            if self.watchdog is not None:
                self.watchdog.watch(worker.pid)
        for worker in self.workers:  # readers start after the forks: no thread runs during preexec_fn
            for pipe, target in ((worker.proc.stdout, 1), (worker.proc.stderr, 2)):
                redirected = self.redirects[worker.local_rank] & target
                teed = self.tee[worker.local_rank] & target
                log = (os.path.join(self.attempt_dir, str(worker.local_rank), "stdout.log" if target == 1 else
                                    "stderr.log") if redirected or teed else None)
                console = None if redirected and not teed else self.console
                reader = StreamReader(os.dup(pipe.fileno()), target, worker.rank, console, log,
                                      progress=worker.rank == 0)
                pipe.close()
                worker.readers.append(reader)
                reader.start()

    def poll(self) -> list[Worker]:
        """Workers that exited since the last call."""
        exited = []
        for worker in self.workers:
            if worker.returncode is None and worker.proc.poll() is not None:
                worker.returncode, worker.end_time = worker.proc.returncode, time.time()
                exited.append(worker)
        return exited

    def done(self) -> bool:
        """Whether every worker has exited."""
        return all(w.returncode is not None for w in self.workers)

    def stop(self, sig: int, timeout: float, give_up=lambda: False) -> None:
        """Signal every worker tree; SIGKILL what is left after ``timeout`` (or at ``give_up()``)."""
        roots = {w.pid for w in self.workers}
        ours = {self.watchdog.pid} if self.watchdog is not None else set()
        if procs.tree_of(roots, orphans=ours):
            procs.signal_tree(roots, sig, ours)
            alive = procs.wait_gone(roots, time.monotonic() + timeout, self.poll, give_up, ours)
            if alive:
                if sig != signal.SIGKILL:
                    self.console.notice(f"{len(alive)} process(es) still alive {timeout:g} s after "
                                        f"{signal.Signals(sig).name}; sending SIGKILL")
                procs.signal_tree(roots, signal.SIGKILL, ours)
                alive = procs.wait_gone(roots, time.monotonic() + _KILL_GRACE, self.poll, orphans=ours)
                if alive:
                    self.console.notice(f"processes {sorted(alive)} survived SIGKILL (uninterruptible sleep?)")
        for worker in self.workers:
            if worker.returncode is None:
                try:
                    worker.proc.wait(_KILL_GRACE)
                except subprocess.TimeoutExpired:
                    continue
                worker.returncode, worker.end_time = worker.proc.returncode, time.time()
        self.join_readers()

    def join_readers(self) -> None:
        """Wait (bounded) for the output readers to reach the end of the workers' pipes."""
        deadline = time.monotonic() + _READER_GRACE
        for worker in self.workers:
            for reader in worker.readers:
                reader.join(max(0.0, deadline - time.monotonic()))


class Signals:
    """SIGINT/SIGTERM/SIGHUP are recorded for forwarding; they and SIGCHLD wake :meth:`wait`."""

    def __enter__(self) -> Signals:
        self.received: int | None = None
        self.count = 0
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        os.set_blocking(self.write_fd, False)
        self.old_wakeup = signal.set_wakeup_fd(self.write_fd, warn_on_full_buffer=False)
        self.old_handlers = {sig: signal.signal(sig, self._on_signal) for sig in FORWARDED_SIGNALS}
        self.old_handlers[signal.SIGCHLD] = signal.signal(signal.SIGCHLD, lambda *_: None)
        return self

    def _on_signal(self, signum, frame) -> None:
        self.received = self.received or signum
        self.count += 1

    def wait(self, timeout: float, fds=()) -> list:
        """Sleep until a signal, a readable ``fds`` entry, or ``timeout``; returns the readable fds."""
        ready = select.select([self.read_fd, *fds], [], [], max(0.0, timeout))[0]
        try:
            while os.read(self.read_fd, 512):
                pass
        except BlockingIOError:
            pass
        return [fd for fd in ready if fd != self.read_fd]

    def __exit__(self, *exc) -> None:
        signal.set_wakeup_fd(self.old_wakeup)
        for sig, handler in self.old_handlers.items():
            signal.signal(sig, handler)
        os.close(self.read_fd)
        os.close(self.write_fd)


class Ending(enum.Enum):
    """How :meth:`Job.supervise` stopped waiting for a worker group."""

    SUCCEEDED = "every worker exited with 0"
    FAILED = "a worker failed"
    SIGNALED = "the launcher got SIGINT, SIGTERM or SIGHUP"
    REMOTE = "the coordinator spoke: the round is over elsewhere"


@dataclass
class Outcome:
    """What ended the wait: ``failed`` workers for FAILED, the coordinator's ``messages`` for REMOTE."""

    ending: Ending
    failed: list[Worker] = field(default_factory=list)
    messages: list[dict] = field(default_factory=list)


class Job:
    """One launcher run: the attempt loop, shared by the single- and multi-node paths."""

    def __init__(self, args, console: Console) -> None:
        self.args, self.console = args, console
        self.host = os.uname().nodename
        self.name = args.script
        keep = args.log_dir is not None
        if keep:
            self.base_dir = os.path.abspath(args.log_dir)
            os.makedirs(self.base_dir, exist_ok=True)
        else:
            self.base_dir = tempfile.mkdtemp(prefix="distrib-launch-")
            if args.redirects != "0" or args.tee != "0":
                keep = True
                console.notice(f"worker logs go to {self.base_dir} (choose the place with --log-dir)")
        self.keep = keep
        self.env_base = dict(os.environ)
        if args.nproc > 1 and "OMP_NUM_THREADS" not in os.environ:
            self.env_base["OMP_NUM_THREADS"] = "1"
            console.notice(f"setting OMP_NUM_THREADS=1 for each of the {args.nproc} workers to avoid "
                           "oversubscribing the CPU; set it yourself to tune")
        self.env_base.setdefault("PYTHONUNBUFFERED", "1")  # prefixed lines show up as they are printed
        # --timeline: each worker profiles itself and writes its part; run() merges them
        self.timeline = os.path.abspath(args.timeline) if args.timeline else None
        if self.timeline is not None:
            self.env_base["DISTRIB_TIMELINE"] = self.timeline
        self.watchdog: procs.Watchdog | None = None

    def attempt_dir(self, run_id: str, restart_count: int) -> str:
        """Where one attempt's error files and logs go."""
        return os.path.join(self.base_dir, run_id, f"attempt_{restart_count}")

    def start_group(self, assignment: dict) -> WorkerGroup:
        """Start this node's workers with the ranks of ``assignment``."""
        group = WorkerGroup(self.args, assignment, self.env_base,
                            self.attempt_dir(assignment["run_id"], assignment["restart_count"]), self.console,
                            self.watchdog)
        group.start()
        return group

    def supervise(self, group: WorkerGroup, sigs: Signals, link=None) -> Outcome:
        """Wait until the group succeeds or a worker fails, a signal arrives, or ``link`` has messages.

        ``link`` (multi-node: the connection to the coordinator, see ``launch/node.py``) is read
        at every wake-up; its ``poll`` raises when the coordinator is lost.
        """
        fds = [link.fileno()] if link is not None else []
        while True:
            if sigs.received:
                return Outcome(Ending.SIGNALED)
            failed = [w for w in group.poll() if w.returncode != 0]
            if failed:
                return Outcome(Ending.FAILED, failed=failed)
            if group.done():
                return Outcome(Ending.SUCCEEDED)
            if link is not None:
                link.poll()
                if link.inbox:
                    return Outcome(Ending.REMOTE, messages=link.take())
            sigs.wait(self.args.monitor_interval, fds)

    def stop_for_signal(self, group: WorkerGroup, sigs: Signals) -> int:
        """Forward the received signal to the group (a second one means SIGKILL); 128+signal."""
        signum = sigs.received
        self.console.notice(f"received {signal.Signals(signum).name}: forwarding it to the workers")
        group.stop(signum, self.args.kill_timeout, give_up=lambda: sigs.count > 1)  # a second signal: SIGKILL
        return 128 + signum

    def cleanup(self) -> None:
        """Remove the temporary directory of error files, unless the user asked for logs."""
        if not self.keep:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def stop_after_failure(self, group: WorkerGroup, failed: list[Worker], sigs: Signals) -> list[Failure]:
        """Stop the group, then describe the failed workers (their stderr is fully read by then)."""
        group.stop(signal.SIGTERM, self.args.kill_timeout, give_up=lambda: sigs.received is not None)
        return self.describe(failed)

    def stop_unasked(self, group: WorkerGroup, sigs: Signals) -> list[Failure]:
        """Stop the group for a reason outside it; describe the workers that had failed by themselves
        by then (exited non-zero, not by our SIGTERM or SIGKILL)."""
        group.stop(signal.SIGTERM, self.args.kill_timeout, give_up=lambda: sigs.received is not None)
        return self.describe([w for w in group.workers if w.returncode not in (0, -signal.SIGTERM, -signal.SIGKILL)])

    def describe(self, workers: list[Worker]) -> list[Failure]:
        """The failures of ``workers``, for the summary and the coordinator."""
        return [Failure.of_worker(w, self.host, w.stderr_tail()) for w in workers]

    def report(self, failures: list[Failure]) -> int:
        """Print the failure summary; the root cause's exit code."""
        self.console.notice("the job failed\n" + format_summary(self.name, failures))
        return root_cause(failures).exit_code or 1


def run_single(job: Job, sigs: Signals) -> int:
    """The attempt loop of a single-node job; returns the launcher's exit code."""
    args = job.args
    run_id = args.run_id or secrets.token_hex(6)
    auth_key = os.environ.get("DISTRIB_AUTH_KEY") or secrets.token_hex(32)
    restart_count = 0
    while True:
        assignment = {"group_rank": 0, "group_world_size": 1, "rank_offset": 0, "world_size": args.nproc,
                      "restart_count": restart_count, "run_id": run_id, "auth_key": auth_key}
        group = job.start_group(assignment)
        outcome = job.supervise(group, sigs)
        if outcome.ending is Ending.SIGNALED:
            return job.stop_for_signal(group, sigs)
        if outcome.ending is Ending.SUCCEEDED:
            group.stop(signal.SIGTERM, args.kill_timeout)  # stragglers: grandchildren left running
            return 0
        failures = job.stop_after_failure(group, outcome.failed, sigs)
        first = root_cause(failures)
        if sigs.received:
            job.report(failures)
            return 128 + sigs.received
        if restart_count >= args.max_restarts:
            return job.report(failures)
        restart_count += 1
        job.console.notice(f"rank {first.rank} failed ({first.describe_exit()}); restarting the worker group "
                           f"({restart_count}/{args.max_restarts})")
