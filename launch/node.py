"""One launcher of a multi-node job: rounds agreed with the coordinator, and what a lost coordinator means.

Every launcher (node 0's too) connects to the coordinator (``launch/coordinator.py``, run
by node 0), joins, starts its workers with the ranks it is assigned, reports how they
ended, and follows the verdict: done, restart, or fail. A thread beats the heartbeat
(Note [Heartbeats] in channel.py). Every wait reads what the coordinator sends and checks
that it is alive, so a lost coordinator (silent for ``LOST_AFTER`` intervals, or a closed
connection) surfaces in bounded time wherever this launcher is: the workers are stopped,
and the launcher connects again and rejoins while restarts remain (giving up after
``--rdzv-timeout``), or exits with the root cause: its own first worker failure if it
had one, else the loss.
"""

from __future__ import annotations

import os
import secrets
import signal
import time

from .agent import Ending, Job, Outcome, Signals, WorkerGroup
from .channel import LOST_AFTER, Channel, HeartbeatSender, RendezvousError, connect
from .coordinator import LAST_CALL, Coordinator, fail_verdict
from .errors import Failure

__all__ = ["run_node", "CoordinatorLost"]


class CoordinatorLost(Exception):
    """The coordinator fell silent, closed the connection, or sent something unreadable."""


class Link:
    """This launcher's connection to the coordinator, with its heartbeat thread."""

    def __init__(self, channel: Channel, interval: float) -> None:
        self.channel = channel
        self.lost_after = LOST_AFTER * interval
        self.sender = HeartbeatSender(channel, interval)

    def fileno(self) -> int:
        """The connection's file descriptor, for select()."""
        return self.channel.fileno()

    def send(self, message: dict) -> None:
        """Send ``message``; raises CoordinatorLost when the connection is broken."""
        try:
            self.channel.send(message)
        except OSError as exc:
            raise CoordinatorLost(f"sending to it failed ({exc})") from exc

    @property
    def inbox(self) -> list[dict]:
        """The messages read so far and not yet taken, oldest first."""
        return self.channel.inbox

    def take(self) -> list[dict]:
        """The inbox's messages, oldest first, emptying it."""
        return self.channel.take()

    def poll(self) -> None:
        """Read what the coordinator sent, without blocking, into :attr:`inbox`.

        Raises CoordinatorLost when it closed the connection or has been silent too long.
        """
        try:
            self.channel.poll_ready()
        except (OSError, ValueError, RendezvousError) as exc:
            raise CoordinatorLost(str(exc)) from exc
        silence = self.channel.silence()
        if silence > self.lost_after:
            raise CoordinatorLost(f"no heartbeat for {silence:.1f} s")

    def close(self) -> None:
        """Stop the heartbeats and close the connection."""
        self.channel.shutdown()  # wakes a heartbeat blocked in send
        self.sender.stop()
        self.channel.close()


class Node:
    """The agent of one node: its rounds, and the decision to rejoin or give up when the coordinator is lost."""

    def __init__(self, job: Job, sigs: Signals, key: bytes | None, coordinator: Coordinator | None) -> None:
        self.job, self.sigs, self.key, self.coordinator = job, sigs, key, coordinator
        self.args, self.notice = job.args, job.console.notice
        self.address = f"{self.args.master_addr}:{self.args.master_port + 1}"
        self.agent_id = secrets.token_hex(8)  # tells the coordinator a reconnection from a second launcher
        self.restart_count = 0  # of the round this node ran last
        self.failures: list[Failure] = []  # this node's failed workers in that round
        self.lost = ""  # why the coordinator was lost last, while this node tries to rejoin
        self.link: Link | None = None

    def run(self) -> int:
        """Take part in rounds until the job is done or failed; returns this launcher's exit code."""
        while True:
            try:
                channel = connect(self.args.master_addr, self.args.master_port + 1, self.key,
                                  time.monotonic() + self.args.rdzv_timeout,
                                  give_up=lambda: self.sigs.received is not None,
                                  send_timeout=LOST_AFTER * self.args.heartbeat_interval)
            except (RendezvousError, OSError, ValueError) as exc:
                cause = f"rendezvous failed: {exc}"
                return self._give_up(f"{self.lost}; then {cause}" if self.lost else cause)
            self.link = Link(channel, self.args.heartbeat_interval)
            try:
                return self._rounds()
            except CoordinatorLost as exc:
                self.lost = f"lost node 0 ({self.args.master_addr}, the coordinator): {exc}"
                if self.restart_count >= self.args.max_restarts or (self.coordinator and self.coordinator.finished):
                    return self._give_up(self.lost)
                self.notice(f"{self.lost}; joining again (restart {self.restart_count + 1}/{self.args.max_restarts})")
            finally:
                self.link.close()

    def _rounds(self) -> int:
        while True:
            self.link.send({"op": "join", "node_rank": self.args.node_rank, "nproc": self.args.nproc,
                            "host": self.job.host, "agent_id": self.agent_id})
            assignment = self._wait_message(time.monotonic() + self.args.rdzv_timeout + LAST_CALL)
            if assignment is None:
                return self._abort_for_signal()
            if assignment["op"] != "assign":
                return self._verdict(assignment)
            self.restart_count, self.failures, self.lost = assignment["restart_count"], [], ""
            group = self.job.start_group(assignment)
            verdict = self._run_group(group)
            if verdict is None:
                return self._abort_for_signal()
            if verdict["op"] != "restart":
                return self._verdict(verdict)
            self.notice(f"restarting the worker group ({verdict['restart_count']}/{self.args.max_restarts}): "
                        f"{verdict['reason']}")

    def _run_group(self, group: WorkerGroup) -> dict | None:
        """Supervise the group, stop it, report, and wait for the verdict (None on a signal)."""
        try:
            outcome = self.job.supervise(group, self.sigs, self.link)
        except CoordinatorLost:
            self.failures = self.job.stop_unasked(group, self.sigs)
            raise
        if outcome.ending is Ending.SIGNALED:
            self.job.stop_for_signal(group, self.sigs)
            return None
        return self._end_round(group, outcome) or self._wait_message()

    def _end_round(self, group: WorkerGroup, outcome: Outcome) -> dict | None:
        """Stop the group and send this node's result; the verdict if the coordinator already gave it."""
        if outcome.ending is Ending.FAILED:
            self.failures = self.job.stop_after_failure(group, outcome.failed, self.sigs)
            self.link.send({"op": "result", "ok": False, "failures": [f.to_dict() for f in self.failures]})
            return None
        if outcome.ending is Ending.SUCCEEDED:
            group.stop(signal.SIGTERM, self.args.kill_timeout)  # stragglers: grandchildren left running
            self.link.send({"op": "result", "ok": True})
            return None
        # REMOTE: the round is over elsewhere (a node failed or was lost)
        self.failures = self.job.stop_unasked(group, self.sigs)
        self.link.send({"op": "result", "ok": not self.failures, "failures": [f.to_dict() for f in self.failures],
                        "stopped": True})
        return next((m for m in outcome.messages if m.get("op") in ("done", "restart", "fail")), None)

    def _wait_message(self, deadline: float | None = None) -> dict | None:
        """The next message other than ``stop`` (None on a signal), or a ``fail`` at ``deadline``.

        Without a deadline it waits as long as the coordinator is alive (the other nodes'
        workers may run on); raises CoordinatorLost when it is not.
        """
        while True:
            self.link.poll()
            while self.link.inbox:
                message = self.link.inbox.pop(0)
                if message.get("op") != "stop":
                    return message
            if self.sigs.received:
                return None
            if deadline is not None and time.monotonic() >= deadline:
                return fail_verdict([], f"no reply from the coordinator at {self.address} in time")
            self.sigs.wait(self.args.monitor_interval, [self.link.fileno()])

    def _abort_for_signal(self) -> int:
        """Tell the coordinator this launcher got a signal (ending the job on every node); 128+signal."""
        code = 128 + self.sigs.received
        try:
            self.link.send({"op": "abort", "exit_code": code,
                            "reason": f"the launcher on {self.job.host} got {signal.Signals(self.sigs.received).name}"})
        except CoordinatorLost:
            pass
        return code

    def _verdict(self, verdict: dict) -> int:
        """Print a ``fail`` verdict's summary and reason; the exit code (0 for ``done``)."""
        if verdict["op"] == "done":
            return 0
        failures = [Failure(**f) for f in verdict.get("failures", [])]
        if failures:
            self.job.report(failures)
        if verdict.get("reason"):
            self.notice(f"the job failed: {verdict['reason']}")
        return int(verdict.get("exit_code") or 1)

    def _give_up(self, cause: str) -> int:
        """End without the coordinator: this node's failures (if any) are the root cause."""
        if self.sigs.received:
            return 128 + self.sigs.received
        return self._verdict(fail_verdict([f.to_dict() for f in self.failures], cause))


def run_node(job: Job, sigs: Signals) -> int:
    """Run this launcher's part of a multi-node job (node 0 also runs the coordinator); its exit code."""
    env_key = os.environ.get("DISTRIB_AUTH_KEY") or None
    key = env_key.encode() if env_key else None
    coordinator = None
    if job.args.node_rank == 0:
        if key is None:
            job.console.notice("DISTRIB_AUTH_KEY is not set: the rendezvous hands a fresh job key to any launcher "
                               "that reaches it; set the same DISTRIB_AUTH_KEY on every node to authenticate them")
        try:
            coordinator = Coordinator(job.args, key, job.args.run_id or secrets.token_hex(6),
                                      env_key or secrets.token_hex(32), job.console.notice).start()
        except RendezvousError as exc:
            job.console.notice(f"rendezvous failed: {exc}")
            return 1
    try:
        return Node(job, sigs, key, coordinator).run()
    finally:
        if coordinator is not None:
            coordinator.join(5.0)
