"""Issue 3 workloads: MLP and CNN train steps, and the MLP's peak memory, ours vs torch;
issue 19: LSTM and GRU forward + backward.

Used by ``scripts/bench.py --only nn``. Each train step is forward, cross-entropy,
backward and an SGD-with-momentum update, on fixed random data, with the same
thread count for both frameworks. Issue 14: the MLP and CNN steps also run with the
model and its loss under ``tensor.compile`` (Note [Compiled loss]), and with the model alone
compiled, beside our eager step in the same processes (Note [Interleaved compiled rows]).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def _mlp(lib, nn_mod):
    return nn_mod.Sequential(
        nn_mod.Linear(784, 512), nn_mod.ReLU(), nn_mod.Linear(512, 512), nn_mod.ReLU(), nn_mod.Linear(512, 10))


def _cnn(lib, nn_mod):
    return nn_mod.Sequential(
        nn_mod.Conv2d(1, 16, 5), nn_mod.ReLU(), nn_mod.MaxPool2d(2),
        nn_mod.Conv2d(16, 32, 5), nn_mod.ReLU(), nn_mod.MaxPool2d(2),
        nn_mod.Flatten(), nn_mod.Linear(512, 10))


# Issue 19's recurrent workloads: (layer, options), input (seq 50, batch 16, features 64),
# hidden size 128; a step is forward and backward.
_RECURRENT = {
    "lstm": ("LSTM", {}), "gru": ("GRU", {}),
    "lstm2bi": ("LSTM", {"num_layers": 2, "bidirectional": True}),
    "gru2bi": ("GRU", {"num_layers": 2, "bidirectional": True}),
}


def _recurrent_step(lib, nn_mod, model_name: str):
    cls, options = _RECURRENT[model_name]
    model = getattr(nn_mod, cls)(64, 128, **options)
    x = lib.from_numpy(np.random.default_rng(0).standard_normal((50, 16, 64), dtype=np.float32))

    def step():
        model.zero_grad()
        out, _ = model(x)
        out.sum().backward()
    return step


def _one_thread() -> None:
    import tensor  # noqa: PLC0415 - in the child only

    tensor.set_num_threads(1)


def _whole_batch_loops() -> None:
    from tensor.ops import _lstm_numba  # noqa: PLC0415 - in the child only

    _lstm_numba._MIN_SPLIT_ROWS = 1 << 30  # Note [Batch halves] off: each LSTM loop on one thread


# Issue 19's open question (BENCHMARKS.md): what the one-layer LSTM gains from the second thread.
_OURS_THREADING = {"ours-1-thread": _one_thread, "ours-whole-loops": _whole_batch_loops}


def make_step(framework: str, model_name: str):
    """A closure running one train step of ``model_name`` ('mlp', 'cnn' or a key of
    ``_RECURRENT``, forward and backward only) in ``framework`` ('ours', 'ours-compiled': the
    model under ``tensor.compile``, 'ours-compiled-loss': the model and the loss compiled as one
    function, Note [Compiled loss], 'ours-1-thread' and 'ours-whole-loops' for a recurrent
    model: ours on one intra-op thread, or with each LSTM loop whole, or 'torch')."""
    # Imported here so that a child process measuring one framework's memory loads only that one.
    if framework.startswith("ours"):
        import nn as nn_mod  # noqa: PLC0415
        import tensor as lib  # noqa: PLC0415
        from nn import functional as F  # noqa: PLC0415
        optim = nn_mod.optim
    else:
        import torch as lib  # noqa: PLC0415
        from torch import nn as nn_mod  # noqa: PLC0415
        from torch.nn import functional as F  # noqa: PLC0415
        optim = lib.optim
    lib.manual_seed(0)
    if model_name in _RECURRENT:
        _OURS_THREADING.get(framework, lambda: None)()
        return _recurrent_step(lib, nn_mod, model_name)
    rng = np.random.default_rng(0)
    if model_name == "mlp":
        model, batch, shape = _mlp(lib, nn_mod), 128, (784,)
    else:
        model, batch, shape = _cnn(lib, nn_mod), 64, (1, 28, 28)
    x = lib.from_numpy(rng.standard_normal((batch, *shape), dtype=np.float32))
    y = lib.from_numpy(rng.integers(0, 10, batch))
    opt = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    forward = lib.compile(model) if framework == "ours-compiled" else model
    loss_fn = lib.compile(_loss_of(model, F)) if framework == "ours-compiled-loss" else _loss_of(forward, F)

    def step():
        opt.zero_grad()
        loss = loss_fn(x, y)
        loss.backward()
        opt.step()
    return step


# Note [Compiled loss]: a torch.compile user may compile the model alone
# (``torch.compile(model)``) or the function computing the loss from the batch,
# ``torch.compile(lambda x, y: loss_fn(model(x), y))``; the train step stays the standard one
# (zero_grad, forward and loss, backward, optimizer step), with the backward and the optimizer
# outside the compiled function in both. Issue 14's target rows ("train step, tensor.compile")
# compile the model and its loss; the model-only rows stay beside them for comparison.
def _loss_of(forward, F):
    """The function ``(x, y) -> cross_entropy(forward(x), y)``."""
    return lambda x, y: F.cross_entropy(forward(x), y)


def _peak_rss_child(framework: str, steps: int) -> float:
    """Peak RSS (MiB) of a fresh process running ``steps`` MLP train steps."""
    # VmHWM, not getrusage's ru_maxrss: Linux carries ru_maxrss over from the forking
    # parent (this process, which has torch loaded) across exec.
    code = (
        f"import bench_nn; s = bench_nn.make_step({framework!r}, 'mlp'); [s() for _ in range({steps})]; "
        "print([int(l.split()[1]) / 1024 for l in open('/proc/self/status') if l.startswith('VmHWM')][0])"
    )
    return json.loads(_child(code))


def _child(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {HERE!r}); {code}"],
                         capture_output=True, text=True, timeout=600, cwd=os.path.dirname(HERE), check=True)
    return out.stdout.strip().splitlines()[-1]


def _step_times_child(framework: str, model_name: str, steps: int, clock: str = "perf_counter") -> list:
    """Step times (s) measured in a fresh process that loads only ``framework``, by
    ``time.<clock>`` (``process_time``: CPU time, less disturbed by a loaded machine).

    Note [Separate processes]: torch's OpenMP threads keep spinning for a while after
    each parallel region, and OpenBLAS's threads do too; timing both frameworks in one
    process makes whichever runs second fight the other's idle threads on the cores.
    """
    code = (
        f"import bench_nn, json; print(json.dumps(bench_nn.time_steps({framework!r}, "
        f"{model_name!r}, {steps}, clock={clock!r})))"
    )
    return json.loads(_child(code))


def time_steps(framework: str, model_name: str, steps: int, warmup: int = 20, clock: str = "perf_counter") -> list:
    """Times (``time.<clock>``) of ``steps`` train steps after ``warmup`` (run inside the child
    process)."""
    import time  # noqa: PLC0415 - only the child needs it

    now = getattr(time, clock)
    step = make_step(framework, model_name)
    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        start = now()
        step()
        times.append(now() - start)
    return times


TRAIN_LABELS = {"mlp": "MLP 784-512-512-10 b128", "cnn": "CNN conv5-pool-conv5-pool-fc b64"}


def median_step_ms(frameworks, model_name: str, rounds: int, steps: int) -> dict:
    """Median train-step time (ms) of ``model_name`` per framework, the frameworks' processes
    alternating for ``rounds`` rounds (see Note [Separate processes])."""
    times: dict = {framework: [] for framework in frameworks}
    for _ in range(rounds):
        for framework in frameworks:
            times[framework] += _step_times_child(framework, model_name, steps)
    return {framework: statistics.median(t) * 1e3 for framework, t in times.items()}


# Note [Interleaved compiled rows]: issue 14's compiled-vs-eager rows compare two steps of our
# own framework, so nothing forces them into separate processes (Note [Separate processes] is
# about torch's threads). Measured in separate processes, alternating (6 per side), the MLP
# row swung 0.87-1.03x over four runs on a quiet machine: a compiled process and the eager one
# after it saw different conditions (the load, and whatever differs from one process to the
# next), and a 1-2 ms step has no margin for that. So each of ``rounds`` child processes builds
# every step and runs them in turn, one step each, so that each compiled step has an eager
# step beside it under the same conditions; a row pools the per-step times of all rounds, and
# the spread of the per-process ratios is printed beside the target (BENCHMARKS.md, issue 14).
def interleaved_step_times(names, model_name: str, steps: int, warmup: int = 10) -> dict:
    """Wall times (s) of ``steps`` train steps per name in ``names`` (frameworks of ``make_step``
    or 'floor': ``mlp_floor_step``), the steps taking turns in this process (run in the child)."""
    import time  # noqa: PLC0415 - only the child needs it

    step_of = {name: mlp_floor_step() if name == "floor" else make_step(name, model_name) for name in names}
    for _ in range(warmup):
        for step in step_of.values():
            step()
    times: dict = {name: [] for name in names}
    for _ in range(steps):
        for name, step in step_of.items():
            start = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - start)
    return times


def interleaved_medians(names, model_name: str, rounds: int, steps: int) -> tuple[dict, dict]:
    """Median step time (ms) per name over ``rounds`` child processes (Note [Interleaved compiled
    rows]), and each name's per-process medians (ms)."""
    pooled: dict = {name: [] for name in names}
    per_process: dict = {name: [] for name in names}
    for _ in range(rounds):
        code = f"import bench_nn, json; print(json.dumps(bench_nn.interleaved_step_times({list(names)!r}, "
        times = json.loads(_child(code + f"{model_name!r}, {steps})))"))
        for name in names:
            pooled[name] += times[name]
            per_process[name].append(statistics.median(times[name]) * 1e3)
    return {name: statistics.median(t) * 1e3 for name, t in pooled.items()}, per_process


def compiled_rows(model_name: str, rounds: int, steps: int, floor: bool = False) -> list:
    """Issue 14's rows for ``model_name``: the step with the model and its loss under
    ``tensor.compile`` (Note [Compiled loss]) vs our eager step, the model alone compiled, and
    with ``floor`` (MLP only) the floor of those rows (``mlp_floor_step``)."""
    names = ("ours", "ours-compiled-loss", "ours-compiled") + (("floor",) if floor else ())
    medians, per_process = interleaved_medians(names, model_name, rounds, steps)

    def spread(name: str) -> str:
        ratios = [a / b for a, b in zip(per_process[name], per_process["ours"])]
        return f"per process {min(ratios):.2f}-{max(ratios):.2f}x"

    label = TRAIN_LABELS[model_name]
    eager = medians["ours"]
    rows = [
        (f"{label} train step, tensor.compile (ms)", medians["ours-compiled-loss"], eager, "eager", "<= 0.9x"),
        (f"{label} train step, model alone compiled (ms)", medians["ours-compiled"], eager, "eager", "info"),
    ]
    if floor:
        rows.append(("MLP b128: its 8 matmuls, work outside the model (ms)", medians["floor"], eager, "eager", "floor"))
    return [(*row[:4], f"{row[4]}; {spread(name)}") for row, name in zip(rows, names[1:])]


def mlp_floor_step():
    """The MLP step's floor under ``tensor.compile``: its eight matmuls (the shapes and
    transposed views of the step's forward and backward, through the matmuls the compiled step calls)
    plus what runs outside the compiled model (``zero_grad``, the cross-entropy and its
    backward, the SGD-momentum update). A compiled step whose own elementwise work and
    bookkeeping were free would take this long."""
    import nn  # noqa: PLC0415
    import tensor  # noqa: PLC0415
    from nn import functional as F  # noqa: PLC0415
    from tensor import _threads  # noqa: PLC0415

    rng = np.random.default_rng(0)
    model = _mlp(tensor, nn)
    params = list(model.parameters())
    w1, w2, w3 = (p.detach().numpy() for p in params[::2])
    x, h1, h2 = (rng.standard_normal((128, n), dtype=np.float32) for n in (784, 512, 512))
    g3, g2, g1 = (rng.standard_normal((128, n), dtype=np.float32) for n in (10, 512, 512))
    grads = [tensor.from_numpy(np.zeros(p.shape, np.float32)) for p in params]
    logits = tensor.from_numpy(rng.standard_normal((128, 10), dtype=np.float32)).requires_grad_()
    y = tensor.from_numpy(rng.integers(0, 10, 128))
    opt = nn.optim.SGD(params, lr=0.01, momentum=0.9)
    matmul = _threads.matmul

    def floor():
        opt.zero_grad()
        for a, b in ((x, w1.T), (h1, w2.T), (h2, w3.T), (g3, w3), (g3.T, h2), (g1.T, x)):
            matmul(a, b)
        # the middle layer's two gradient products, side by side as the compiled step runs them
        if _threads.matmul_pair(g2, w2, g2.T, h1) is None:  # Note [Paired products]
            matmul(g2, w2)
            matmul(g2.T, h1)
        logits.grad = None
        F.cross_entropy(logits, y).backward()
        for p, g in zip(params, grads):
            p.grad = g
        opt.step()

    return floor


def bench(repeat: int, paired_times, have_torch: bool):
    """Rows for the table in scripts/bench.py: each framework runs in its own processes,
    alternating, several rounds (see Note [Separate processes])."""
    rows = []
    threads = os.environ.get("OMP_NUM_THREADS", "default")
    rounds, steps = 8, max(2 * repeat, 10)
    frameworks = ("ours", "ours-compiled", "torch") if have_torch else ("ours", "ours-compiled")
    for model_name, target in (("mlp", "<= 1.0x"), ("cnn", "<= 1.5x")):
        medians = median_step_ms(frameworks, model_name, rounds, steps)
        label, peer_ms = TRAIN_LABELS[model_name], medians.get("torch")
        rows.append((f"{label} train step, threads={threads} (ms)", medians["ours"], peer_ms, "torch", target))
        rows += compiled_rows(model_name, rounds, steps)
        rows.append((f"{label} train step, tensor.compile (ms)", medians["ours-compiled"], peer_ms, "torch", "info"))
    rows += recurrent_rows(None, 3, steps, have_torch)  # also alone: bench.py --only rnn
    ours_rss = _peak_rss_child("ours", 20)
    peer_rss = _peak_rss_child("torch", 20) if have_torch else None
    rows.append(("MLP benchmark peak RSS (MiB)", ours_rss, peer_rss, "torch", "<= 1.5x"))
    return rows


def recurrent_rows(models: list | None, rounds: int, steps: int, have_torch: bool, clock: str = "perf_counter") -> list:
    """Issue 19's rows for ``models`` (keys of ``_RECURRENT``; None: all of them): median step
    times, ours and torch's processes alternating for ``rounds`` rounds (see Note [Separate
    processes])."""
    rows = []
    for model_name in models or list(_RECURRENT):
        cls, options = _RECURRENT[model_name]
        ours, peer = [], []
        for _ in range(rounds):
            ours += _step_times_child("ours", model_name, steps, clock)
            if have_torch:
                peer += _step_times_child("torch", model_name, steps, clock)
        label = f"{cls}(64,128){' 2 layers bidir' if options else ''} seq50 b16 fwd+bwd"
        label += " CPU time" if clock == "process_time" else ""
        peer_ms = statistics.median(peer) * 1e3 if peer else None
        rows.append((f"{label} (ms)", statistics.median(ours) * 1e3, peer_ms, "torch", "<= 1.0x"))
    return rows


def lstm_threading_rows(rounds: int, steps: int) -> list:
    """Info rows: the one-layer LSTM step of ours on one intra-op thread and with each LSTM
    loop whole (Note [Batch halves] in tensor/ops/_lstm_numba.py off), as ratios to ours at the
    default threads; the three in separate processes, alternating."""
    variants = ("ours", *_OURS_THREADING)
    medians = median_step_ms(variants, "lstm", rounds, steps)
    return [(f"LSTM(64,128) fwd+bwd, ours {name[5:]} (ms)", medians[name], medians["ours"], "ours", "info")
            for name in variants[1:]]  # fmt: skip


def main(argv=None) -> int:
    """Only the recurrent rows (issue 19), in a few minutes:
    ``python scripts/bench_nn.py [lstm lstm2bi gru gru2bi] [--rounds N] [--steps N] [--cpu]``."""
    import argparse  # noqa: PLC0415 - only the command line needs it

    import bench  # noqa: PLC0415 - its table printer (and torch's thread count)

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("models", nargs="*", help=f"any of {', '.join(_RECURRENT)} (default: all)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating processes per framework (default 3)")
    parser.add_argument("--steps", type=int, default=10, help="timed steps per process (default 10)")
    parser.add_argument("--cpu", action="store_true", help="CPU time (time.process_time) instead of wall time")
    args = parser.parse_args(argv)
    unknown = [m for m in args.models if m not in _RECURRENT]
    if unknown:
        parser.error(f"unknown model(s) {unknown}; choose from {list(_RECURRENT)}")
    clock = "process_time" if args.cpu else "perf_counter"
    models = args.models or list(_RECURRENT)
    bench.print_table(recurrent_rows(models, args.rounds, args.steps, bench.torch is not None, clock))
    return 0


if __name__ == "__main__":
    sys.exit(main())
