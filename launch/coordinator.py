"""The coordinator of a multi-node job: the launchers meet on MASTER_ADDR:MASTER_PORT+1 and agree.

Not to be confused with ``distrib/rendezvous.py``, where the *workers* of a job find each
other. The node-rank-0 launcher runs a small TCP server (:class:`Coordinator`, threads);
every launcher, node 0 included, connects to it over a :class:`~launch.channel.Channel`
and runs the agent side in ``launch/node.py``.

Note [Rendezvous protocol]
    join    agent -> server  {node_rank, nproc, host, agent_id}. When all nodes joined (N,
                             or MIN:MAX after a last call), the server replies to each:
    assign  server -> agent  {group_rank, group_world_size, rank_offset, world_size,
                              restart_count, run_id}. The agents start their workers.
    result  agent -> server  {ok, failures}: the local group finished, failed, or was stopped.
    stop    server -> agent  the round is over (a node failed or was lost): stop your
                             workers, then send a result.
    abort   agent -> server  this launcher got SIGINT/SIGTERM/SIGHUP: end the job, no restart.
    verdict server -> agent  ``done`` (exit 0), ``restart`` {restart_count, reason}: rejoin,
                             or ``fail`` {failures, exit_code, reason}.
    heartbeat  both ways, every ``--heartbeat-interval`` (Note [Heartbeats] in channel.py).
    A node is lost when its connection drops, when it is silent for ``LOST_AFTER``
    heartbeat intervals, or when it does not report within ``--kill-timeout`` +
    ``STOP_GRACE`` of a ``stop``. A lost node ends the round like a failure: the others
    are stopped, and the job restarts while restarts remain (the lost node may connect
    again and rejoin within ``--rdzv-timeout``) or fails with the first worker failure as
    its root cause, else "lost node N (host): ...". A join that arrives during a round
    (a lost node that came back) waits for the next round.
"""

from __future__ import annotations

import queue
import select
import socket
import threading
import time
from dataclasses import dataclass, field

from .channel import LOST_AFTER, Channel, RendezvousError
from .errors import Failure, root_cause

__all__ = ["Coordinator", "fail_verdict"]

LAST_CALL = 2.0  # seconds to wait for more nodes once MIN have joined (MIN:MAX)
STOP_GRACE = 10.0  # seconds past --kill-timeout for a stopped node to report (its SIGKILL and reader grace)


def fail_verdict(failures: list[dict], reason: str, exit_code: int | None = None) -> dict:
    """A ``fail`` verdict; the exit code defaults to the root-cause failure's (1 without failures)."""
    if exit_code is None:
        exit_code = root_cause([Failure(**f) for f in failures]).exit_code if failures else 1
    return {"op": "fail", "exit_code": exit_code or 1, "failures": failures, "reason": reason}


def _cause(verdict: dict) -> str:
    """One line for a ``fail`` verdict: its root-cause failure, else its reason."""
    if verdict["failures"]:
        first = root_cause([Failure(**f) for f in verdict["failures"]])
        return f"rank {first.rank} on {first.host} failed ({first.message or f'exit code {first.exit_code}'})"
    return verdict["reason"]


@dataclass
class Event:
    """What a connection thread tells the coordinator: a message, a new channel, or that it is gone."""

    conn_id: int
    message: dict | None = None
    channel: Channel | None = None
    gone: str = ""


@dataclass
class RoundEnd:
    """A round that did not succeed: its ``fail`` verdict, and whether a launcher aborted it."""

    verdict: dict
    aborted: bool = False


@dataclass
class _Round:
    """The bookkeeping of one running round."""

    waiting: set[int]
    failures: list[dict] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    abort: dict | None = None
    stop_by: float | None = None  # set once ``stop`` was sent


class Coordinator:
    """The coordinator run by the node-rank-0 launcher (see Note [Rendezvous protocol]).

    ``args`` are the launcher's parsed flags; ``key`` authenticates launchers (None: any),
    ``job_key`` is handed to the workers, ``notice`` prints a launcher message.
    Raises RendezvousError when it cannot listen on MASTER_ADDR:MASTER_PORT+1.
    """

    def __init__(self, args, key: bytes | None, run_id: str, job_key: str, notice) -> None:
        self.args, self.key, self.run_id, self.job_key, self.notice = args, key, run_id, job_key, notice
        self.interval = args.heartbeat_interval
        self.lost_after = LOST_AFTER * self.interval
        self.events: queue.Queue[Event] = queue.Queue()
        self.channels: dict[int, Channel] = {}  # owned by the coordinating thread
        self.pending: dict[int, dict] = {}  # joins that arrived during a round
        self.next_beat = 0.0
        host, port = args.master_addr, args.master_port + 1
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.listener.bind((host, port))
        except OSError as exc:
            self.listener.close()
            raise RendezvousError(f"the rendezvous server could not listen on {host}:{port}: {exc} "
                                  f"(is --master-addr this host, and is port {port} free?)") from exc
        self.listener.listen(64)
        self.threads = [threading.Thread(target=self._accept, daemon=True, name="distrib-rdzv-accept"),
                        threading.Thread(target=self._coordinate, daemon=True, name="distrib-rdzv-coordinator")]

    def start(self) -> Coordinator:
        """Start accepting launchers and coordinating; returns self."""
        for thread in self.threads:
            thread.start()
        return self

    @property
    def finished(self) -> bool:
        """Whether the coordinating thread has given its last verdict."""
        return not self.threads[1].is_alive()

    def join(self, timeout: float) -> None:
        """Wait up to ``timeout`` for the last verdict to go out, then stop listening."""
        self.threads[1].join(timeout)
        try:
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
        except OSError:
            pass
        self.listener.close()

    # ---- connections (one thread each)
    def _accept(self) -> None:
        ids = 0
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            ids += 1
            threading.Thread(target=self._serve, args=(ids, sock), daemon=True, name=f"distrib-rdzv-{ids}").start()

    def _serve(self, conn_id: int, sock: socket.socket) -> None:
        channel = Channel(sock, "server", send_timeout=self.lost_after)
        try:
            channel.handshake(self.key, timeout=10.0)
        except (OSError, ValueError, RendezvousError) as exc:
            self.notice(f"rendezvous: refused a connection: {exc}")
            channel.close()
            return
        self.events.put(Event(conn_id, channel=channel))
        try:
            while True:
                select.select([channel.sock], [], [])  # until a frame or EOF (shutdown() wakes it)
                channel.poll()
                for message in channel.take():
                    self.events.put(Event(conn_id, message))
        except ConnectionError:  # EOF or reset: the launcher exited, or was killed
            self.events.put(Event(conn_id, gone="its launcher closed the connection"))
        except (OSError, ValueError, RendezvousError) as exc:
            self.events.put(Event(conn_id, gone=f"its connection failed ({exc})"))
        finally:
            channel.close()

    def _send(self, conn_id: int, message: dict) -> None:
        channel = self.channels.get(conn_id)
        if channel is not None:
            try:
                channel.send(message)
            except OSError:
                channel.shutdown()  # its thread reports it gone

    def _drop(self, conn_id: int) -> None:
        channel = self.channels.pop(conn_id, None)
        self.pending.pop(conn_id, None)
        if channel is not None:
            channel.shutdown()

    def _next_event(self, until: float | None = None) -> Event | None:
        """The next event from a live connection, or None at ``until``.

        Meanwhile it sends the heartbeats that are due, and turns a connection silent for
        ``lost_after`` into a ``gone`` event (Note [Heartbeats]).
        """
        while True:
            now = time.monotonic()
            if now >= self.next_beat:
                for conn_id in list(self.channels):
                    self._send(conn_id, {"op": "heartbeat"})
                self.next_beat = now + self.interval
            for conn_id, channel in list(self.channels.items()):
                if channel.silence() > self.lost_after:
                    self._drop(conn_id)
                    return Event(conn_id, gone=f"no heartbeat for {channel.silence():.1f} s")
            if until is not None and now >= until:
                return None
            wait = self.interval / 4 if until is None else min(self.interval / 4, until - now)
            try:
                event = self.events.get(timeout=wait)
            except queue.Empty:
                continue
            if event.channel is not None:
                self.channels[event.conn_id] = event.channel
            elif event.conn_id in self.channels:
                if event.gone:
                    self._drop(event.conn_id)
                return event

    # ---- the coordinator
    def _coordinate(self) -> None:
        restart_count, previous = 0, None
        while True:
            members, verdict = self._gather()
            if verdict is not None:  # the rendezvous itself failed
                if previous is not None:  # after a failed round: that round's cause comes first
                    verdict = fail_verdict(previous["failures"], f"{previous['reason']}; then {verdict['reason']}",
                                           previous["exit_code"])
                return self._finish(verdict)
            end = self._run_round(members, restart_count)
            if end is None:
                return self._finish({"op": "done"})
            if end.aborted or restart_count >= self.args.max_restarts:
                return self._finish(end.verdict)
            restart_count += 1
            previous = end.verdict
            for conn_id in members:
                self._send(conn_id, {"op": "restart", "restart_count": restart_count, "reason": _cause(end.verdict)})

    def _gather(self) -> tuple[dict[int, dict] | None, dict | None]:
        """Wait for the nodes of one round: ({conn_id: join}, None), or (None, a fail verdict)."""
        args = self.args
        joined: dict[int, dict] = {}
        for conn_id, message in list(self.pending.items()):
            self._admit(joined, conn_id, message)
        self.pending.clear()
        deadline, last_call = time.monotonic() + args.rdzv_timeout, None
        while len(joined) < args.max_nodes:
            if len(joined) < args.min_nodes:
                last_call = None  # (again: a node that had joined was lost)
            elif last_call is None:
                last_call = time.monotonic() + LAST_CALL
            event = self._next_event(deadline if last_call is None else min(deadline, last_call))
            if event is None:
                if last_call is not None:
                    break
                return None, fail_verdict([], f"rendezvous timed out after {args.rdzv_timeout:.0f} s: {len(joined)} "
                                              f"of {args.min_nodes} node(s) joined")
            op = None if event.gone else event.message.get("op")
            if event.gone:
                joined.pop(event.conn_id, None)
            elif op == "join":
                self._admit(joined, event.conn_id, event.message)
            elif op == "abort":
                return None, fail_verdict([], event.message.get("reason", "a launcher was stopped"),
                                          int(event.message.get("exit_code", 1)))
        return joined, None

    def _admit(self, joined: dict[int, dict], conn_id: int, message: dict) -> None:
        """Add a join; the same launcher on a new connection replaces its old one, a second
        launcher with a taken ``--node-rank`` (fixed ``--nnodes``) is refused."""
        rank = message["node_rank"]
        for other, join in list(joined.items()):
            if join["node_rank"] == rank and join.get("agent_id") == message.get("agent_id"):
                del joined[other]
                self._drop(other)
            elif join["node_rank"] == rank and self.args.min_nodes == self.args.max_nodes:
                self._send(conn_id, fail_verdict([], f"two launchers have --node-rank {rank}"))
                return
        joined[conn_id] = dict(message, arrival=len(joined))

    def _assign(self, members: dict[int, dict], restart_count: int) -> None:
        order = sorted(members, key=lambda c: (members[c]["node_rank"], members[c]["arrival"]))
        world_size = sum(int(members[c]["nproc"]) for c in order)
        offset = 0
        for group_rank, conn_id in enumerate(order):
            self._send(conn_id, {"op": "assign", "group_rank": group_rank, "group_world_size": len(order),
                                 "rank_offset": offset, "world_size": world_size, "restart_count": restart_count,
                                 "run_id": self.run_id, "auth_key": self.job_key})
            offset += int(members[conn_id]["nproc"])

    def _run_round(self, members: dict[int, dict], restart_count: int) -> RoundEnd | None:
        """Assign ranks and wait for every node's result: None if all succeeded."""
        self._assign(members, restart_count)
        state = _Round(waiting=set(members))
        while state.waiting:
            event = self._next_event(state.stop_by)
            if event is None:  # the stopped nodes did not report in time
                for conn_id in state.waiting:
                    state.reasons.append(f"{self._node(members, conn_id)} did not report within "
                                         f"{self.args.kill_timeout + STOP_GRACE:g} s of the stop")
                    self._drop(conn_id)
                break
            if event.conn_id not in state.waiting:
                if event.message is not None and event.message.get("op") == "join":
                    self.pending[event.conn_id] = event.message  # a lost node came back
                continue
            self._record(state, members, event)
            if (state.failures or state.reasons or state.abort) and state.stop_by is None:
                for conn_id in state.waiting:
                    self._send(conn_id, {"op": "stop"})
                state.stop_by = time.monotonic() + self.args.kill_timeout + STOP_GRACE
        if not (state.failures or state.reasons or state.abort):
            return None
        if state.abort is not None:
            return RoundEnd(fail_verdict(state.failures, state.abort.get("reason", ""),
                                         int(state.abort.get("exit_code", 1))), aborted=True)
        return RoundEnd(fail_verdict(state.failures, "; ".join(state.reasons)))

    @staticmethod
    def _node(members: dict[int, dict], conn_id: int) -> str:
        return f"node {members[conn_id]['node_rank']} ({members[conn_id]['host']})"

    def _record(self, state: _Round, members: dict[int, dict], event: Event) -> None:
        """Note one member's result, abort or loss in ``state``."""
        op = None if event.gone else event.message.get("op")
        if event.gone:
            state.reasons.append(f"lost {self._node(members, event.conn_id)}: {event.gone}")
        elif op == "result":
            state.failures.extend(event.message.get("failures", []))
        elif op == "abort":
            state.abort = state.abort or event.message
        else:
            return
        state.waiting.discard(event.conn_id)

    def _finish(self, verdict: dict) -> None:
        """Give every connected launcher the last verdict; wait (bounded) for them to hang up, so that
        closing our sockets at exit cannot reset a connection before the verdict is read."""
        for conn_id in list(self.channels):
            self._send(conn_id, verdict)
        until = time.monotonic() + min(self.lost_after, 5.0)
        while self.channels and self._next_event(until) is not None:
            pass
