"""Issue 14: fused forward+backward blocks, compiled vs our eager (see ``bench_compile.py``).

Also its own group, ``scripts/bench.py --only compile_blocks``: these rows and a softmax
alone, without ``compile``'s k-means and first-call rows (minutes on a loaded machine)."""

from __future__ import annotations

import statistics

import numpy as np


def _mlp_block(lib, F):
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.standard_normal((256, 512)), dtype=lib.float32)
    w1 = lib.tensor(rng.standard_normal((512, 1024)) * 0.03, dtype=lib.float32).requires_grad_()
    w2 = lib.tensor(rng.standard_normal((1024, 512)) * 0.03, dtype=lib.float32).requires_grad_()

    def block(x):
        return ((F.gelu(x @ w1, approximate="tanh") @ w2 + x) ** 2).mean()

    return block, x, (w1, w2)


def _mlp_stack(lib, F, blocks=4):
    """Four GELU-tanh MLP blocks of ``_mlp_block``'s sizes, residual: a split region each."""
    rng = np.random.default_rng(4)
    x = lib.tensor(rng.standard_normal((256, 512)), dtype=lib.float32)
    weights = [
        lib.tensor(rng.standard_normal(shape) * 0.03, dtype=lib.float32).requires_grad_()
        for _ in range(blocks)
        for shape in ((512, 1024), (1024, 512))
    ]

    def stack(x):
        for w1, w2 in zip(weights[::2], weights[1::2]):
            x = F.gelu(x @ w1, approximate="tanh") @ w2 + x
        return (x**2).mean()

    return stack, x, weights


def _norm_block(lib, F):
    rng = np.random.default_rng(1)
    x = lib.tensor(rng.standard_normal((512, 1024)), dtype=lib.float32).requires_grad_()
    w = lib.ones(1024, requires_grad=True)

    def block(x):
        y = F.layer_norm(x, (1024,), w) * 1.5 + 0.1
        return (F.softmax(y, -1) * y).sum()

    return block, x, (x, w)


def _step(fn, x, params):
    def run():
        for p in params:
            p.grad = None
        fn(x).backward()

    return run


def block_rows(repeat, paired_times):
    """Rows: GELU-tanh MLP block and LayerNorm+softmax chain, forward+backward, compiled vs eager."""
    import tensor  # noqa: PLC0415
    from nn import functional as F  # noqa: PLC0415

    rows = []
    for name, make in (
        ("GELU-tanh MLP block fwd+bwd (ms)", _mlp_block),
        ("LayerNorm+softmax chain fwd+bwd (ms)", _norm_block),
    ):
        fn, x, params = make(tensor, F)
        compiled = tensor.compile(fn)
        ours, eager = paired_times(_step(compiled, x, params), _step(fn, x, params), repeat)
        rows.append((name, ours * 1e3, eager * 1e3, "eager", "<= 0.6x"))
    return rows


def _back_to_back_row(lib, F, repeat, steps=20):
    """The GELU block's row with each side timed over ``steps`` steps back to back (as training
    runs), the sides alternating per run: paired single steps each start after the other
    side's step, whose threads and cache state they inherit."""
    import time  # noqa: PLC0415

    fn, x, params = _mlp_block(lib, F)
    compiled, eager = _step(lib.compile(fn), x, params), _step(fn, x, params)
    times: dict = {compiled: [], eager: []}
    for run in range(max(3, repeat // 3) + 1):
        for step in (compiled, eager):
            step()
            start = time.perf_counter()
            for _ in range(steps):
                step()
            if run:  # the first run of each side warms up
                times[step].append((time.perf_counter() - start) / steps)
    ours, peer = (statistics.median(times[s]) for s in (compiled, eager))
    return (f"GELU-tanh MLP block fwd+bwd, {steps} steps back to back (ms)", ours * 1e3, peer * 1e3, "eager", "info")


def _softmax_row(lib, F, repeat, paired_times):
    x = lib.tensor(np.random.default_rng(2).standard_normal((512, 1024)), dtype=lib.float32)

    def fn(x):
        return F.softmax(x, -1)

    compiled = lib.compile(fn)
    ours, eager = paired_times(lambda: compiled(x), lambda: fn(x), repeat)
    return ("softmax 512x1024 float32, forward (ms)", ours * 1e3, eager * 1e3, "eager", "info")


def _gemm_floor_rows(lib, F, repeat, paired_times):
    """Two rows against the whole eager block: the GELU block's five matmuls alone, each split
    on its own across the threads (the shapes, transposed views and matmul entry point an
    op-by-op schedule uses); and the same products split by the hidden dim, each thread's
    slice whole, in one hand-off: the products of the compiled block's split regions (Note
    [Split regions] in tensor/_compile/split_region.py), so the floor of its row."""
    from tensor import _threads  # noqa: PLC0415 - the matmul both paths call on the CPU

    fn, x, params = _mlp_block(lib, F)
    w1, w2 = (p.detach().numpy() for p in params)
    xa = x.numpy()
    rng = np.random.default_rng(3)
    act, grad, grad_act = (rng.standard_normal(s, dtype=np.float32) for s in ((256, 1024), (256, 512), (256, 1024)))

    def gemms():
        _threads.matmul(xa, w1)  # forward: x @ w1
        _threads.matmul(act, w2)  # forward: gelu(.) @ w2
        _threads.matmul(grad, w2.T)  # backward: the gradient of gelu(.)
        _threads.matmul(act.T, grad)  # backward: w2's gradient
        _threads.matmul(xa.T, grad_act)  # backward: w1's gradient

    hidden = w1.shape[1]
    h, dw1, dw2 = np.empty((256, hidden), np.float32), np.empty_like(w1), np.empty_like(w2)
    y_parts = np.empty((_threads.get_num_threads(), 256, 512), np.float32)

    def hidden_slice(block):
        # Each thread's share of all five products when the hidden dim is split across the
        # threads (Megatron's column/row-parallel MLP, on cores): no product is split twice.
        part = y_parts[block.start * len(y_parts) // hidden]
        np.matmul(xa, w1[:, block], out=h[:, block])
        np.matmul(act[:, block], w2[block], out=part)
        np.matmul(grad, w2[block].T, out=h[:, block])
        np.matmul(act[:, block].T, grad, out=dw2[block])
        np.matmul(xa.T, grad_act[:, block], out=dw1[:, block])

    def gemms_by_hidden_slice():
        _threads.parallel_for(hidden, 1 << 30, hidden_slice)

    ours, eager = paired_times(gemms, _step(fn, x, params), repeat)
    split, eager_again = paired_times(gemms_by_hidden_slice, _step(fn, x, params), repeat)
    return [
        ("GELU-tanh MLP block: its 5 matmuls alone, each split on its own (ms)",
         ours * 1e3, eager * 1e3, "eager", "info: op by op"),
        ("GELU-tanh MLP block: its 5 matmuls split by the hidden dim, one slice per thread (ms)",
         split * 1e3, eager_again * 1e3, "eager", "floor of the <= 0.6x row"),
    ]


def _stack_row(lib, F, repeat, paired_times):
    fn, x, params = _mlp_stack(lib, F)
    ours, eager = paired_times(_step(lib.compile(fn), x, params), _step(fn, x, params), max(3, repeat // 4))
    return ("GELU-tanh MLP stack of 4 blocks fwd+bwd (ms)", ours * 1e3, eager * 1e3, "eager", "info")


def bench(repeat, paired_times, have_torch):
    """Rows for ``bench.py --only compile_blocks``: the fused blocks, the GELU block's matmul
    floor, the GELU block timed back to back, a stack of four such blocks and a fused softmax."""
    import tensor  # noqa: PLC0415
    from nn import functional as F  # noqa: PLC0415

    return (
        block_rows(repeat, paired_times)
        + _gemm_floor_rows(tensor, F, repeat, paired_times)
        + [_back_to_back_row(tensor, F, repeat), _stack_row(tensor, F, repeat, paired_times)]
        + [_softmax_row(tensor, F, repeat, paired_times)]
    )
