"""Aggregating recorded events: ``key_averages()`` and its ``table()``."""

from __future__ import annotations

import dataclasses

__all__ = ["FunctionEventAvg", "EventList", "self_times"]

_SORT_KEYS = (
    "cpu_time_total",
    "self_cpu_time_total",
    "cpu_time",
    "count",
    "cpu_memory_usage",
    "self_cpu_memory_usage",
    "cuda_time_total",
    "self_cuda_time_total",
    "peak_memory",
)


@dataclasses.dataclass
class FunctionEventAvg:
    """The statistics of one op/event name (and input shapes, when grouped by them); times in µs."""

    key: str
    count: int = 0
    cpu_time_total: float = 0.0
    self_cpu_time_total: float = 0.0
    cuda_time_total: float = 0.0
    input_shapes: str = ""
    cpu_memory_usage: int = 0
    peak_memory: int = 0

    @property
    def cpu_time(self) -> float:
        """Mean time per call, µs."""
        return self.cpu_time_total / max(self.count, 1)

    @property
    def self_cpu_memory_usage(self) -> int:
        """Bytes of the outputs made by this op itself."""
        return self.cpu_memory_usage

    @property
    def self_cuda_time_total(self) -> float:
        """Device time of this op's kernels, µs."""
        return self.cuda_time_total


def self_times(events: list[tuple]) -> list[int]:
    """Each event's duration minus its children's (events nested on the same thread), ns."""
    order = sorted(range(len(events)), key=lambda i: (str(events[i][2]), events[i][3], -events[i][4]))
    own = [e[4] for e in events]
    stack: list[int] = []
    thread = None
    for i in order:
        _, _, tid, start, dur, _ = events[i]
        if tid != thread:
            stack, thread = [], tid
        while stack and events[stack[-1]][3] + events[stack[-1]][4] <= start:
            stack.pop()
        if stack:
            own[stack[-1]] -= dur
        stack.append(i)
    return own


class EventList(list):
    """The list ``key_averages()`` returns: ``FunctionEventAvg`` rows with ``table()``."""

    def __init__(self, rows, total_ns: int, with_shapes: bool, with_memory: bool) -> None:
        super().__init__(rows)
        self.total_ns = total_ns
        self.with_shapes = with_shapes
        self.with_memory = with_memory

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_name_column_width: int = 55) -> str:
        """The rows as a text table, sorted by ``sort_by`` (descending), at most ``row_limit`` rows.

        Raises:
            ValueError: for an unknown ``sort_by``.
        """
        rows = list(self)
        if sort_by is not None:
            if sort_by not in _SORT_KEYS:
                raise ValueError(f"table: unknown sort_by {sort_by!r}; expected one of {', '.join(_SORT_KEYS)}")
            rows.sort(key=lambda r: getattr(r, sort_by), reverse=True)
        if row_limit is not None and row_limit > 0:
            rows = rows[:row_limit]
        total_us = max(self.total_ns / 1000, 1e-9)
        header = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"]
        if any(r.cuda_time_total for r in self):
            header.append("CUDA total")
        if self.with_memory:
            header += ["CPU Mem", "Peak Mem"]
        if self.with_shapes:
            header.append("Input Shapes")
        lines = []
        for r in rows:
            cells = [
                r.key[:max_name_column_width],
                f"{100 * r.self_cpu_time_total / total_us:.2f}%",
                _us(r.self_cpu_time_total),
                f"{100 * r.cpu_time_total / total_us:.2f}%",
                _us(r.cpu_time_total),
                _us(r.cpu_time),
                str(r.count),
            ]
            if "CUDA total" in header:
                cells.append(_us(r.cuda_time_total))
            if self.with_memory:
                cells += [_bytes(r.cpu_memory_usage), _bytes(r.peak_memory) if r.peak_memory else ""]
            if self.with_shapes:
                cells.append(r.input_shapes)
            lines.append(cells)
        widths = [max(len(h), *(len(c[i]) for c in lines)) if lines else len(h) for i, h in enumerate(header)]
        rule = "  ".join("-" * w for w in widths)
        out = [rule, "  ".join(h.ljust(w) for h, w in zip(header, widths)), rule]
        out += ["  ".join(c.ljust(w) for c, w in zip(cells, widths)) for cells in lines]
        out += [rule, f"Self CPU time total: {_us(total_us)}"]
        return "\n".join(out)

    def __str__(self) -> str:
        return self.table()


def average(events: list[tuple], group_by_input_shape: bool, with_memory: bool) -> EventList:
    """Group ``events`` by name (and input shapes) into ``FunctionEventAvg`` rows."""
    own = self_times(events)
    rows: dict[tuple, FunctionEventAvg] = {}
    for event, self_ns in zip(events, own):
        name, category, _, _, dur, args = event
        shapes = str(args.get("Input Dims", "")) if group_by_input_shape else ""
        row = rows.get((name, shapes))
        if row is None:
            row = rows[(name, shapes)] = FunctionEventAvg(name, input_shapes=shapes)
        if category == "kernel":  # the device time of an op counted in its host row
            row.cuda_time_total += dur / 1000
            continue
        row.count += 1
        row.cpu_time_total += dur / 1000
        row.self_cpu_time_total += self_ns / 1000
        row.cpu_memory_usage += args.get("bytes", 0)
        row.peak_memory = max(row.peak_memory, args.get("peak_bytes", 0))
    total = sum(ns for ns, e in zip(own, events) if e[1] != "kernel")
    return EventList(rows.values(), total, group_by_input_shape, with_memory)


def _us(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _bytes(n: int) -> str:
    for unit, size in (("Gb", 1 << 30), ("Mb", 1 << 20), ("Kb", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} b"
